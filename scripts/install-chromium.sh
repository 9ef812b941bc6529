#!/usr/bin/env bash
# Headless Chromium for the report's browser test (Debian's package). Skipped quietly if present.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || { echo "not root: cannot apt-get install chromium" >&2; exit 1; }
apt-get update -qq >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1
