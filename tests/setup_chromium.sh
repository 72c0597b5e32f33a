#!/bin/sh
# Installs Debian's chromium for the HTML report's screenshot test (tests/test_report_html_browser.py).
# Idempotent: does nothing when /usr/bin/chromium is already there. Needs root (CI runs as root).
set -eu
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium fonts-dejavu-core
