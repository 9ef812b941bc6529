#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the report's browser tests (Debian's chromium and
# chromium-driver packages). Skipped quietly if both are present.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || { echo "not root: cannot apt-get install chromium chromium-driver" >&2; exit 1; }
apt-get update -qq >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1
