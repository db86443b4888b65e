#!/usr/bin/env bash
# Debian's chromium for the browser tests of `fleet report --format html`
# (tests/test_fleet_html.py drives /usr/bin/chromium headless through Playwright's
# Python package, from the dev extras, with executable_path: no browser download).
# Idempotent; runs as root on a fresh Debian 12 machine.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && [ -x /usr/bin/chromium ]; then
    echo "chromium present: $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
    exit 0
fi
echo "installing: chromium"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version 2>/dev/null | head -n1
