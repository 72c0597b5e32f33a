#!/usr/bin/env bash
# Headless Chromium for the HTML report test (Debian package), plus a font so the
# screenshots a person looks at carry readable text. No-op when chromium is present.
set -e
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
else
  echo "chromium is missing: install Debian's chromium package (the HTML report test needs it)" >&2
fi
