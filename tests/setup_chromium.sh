#!/usr/bin/env bash
# Headless Chromium for the HTML report test (Debian package). No-op when present.
set -e
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "chromium is missing: install Debian's chromium package (the HTML report test needs it)" >&2
fi
