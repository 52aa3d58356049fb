#!/usr/bin/env bash
# Installs what the real-controller tests need: chip-core's native deps, /data for its ini files,
# python-matter-server 7.0.1 (Python 3.11 line; pulls home-assistant-chip-core 2024.11.4, the same
# release as our pinned home-assistant-chip-clusters) and matter.js in a git-ignored local dir.
# Idempotent: every step checks first and is skipped when already done. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python}
MATTERJS_DIR="$ROOT/.cache/matterjs"
MATTERJS_VERSION=0.17.9
MATTER_SERVER_VERSION=7.0.1

source scripts/steps.sh

step "iproute2" "command -v ip" "apt_install iproute2"
step "openssl" "command -v openssl" "apt_install openssl"
step "node and npm (matter.js)" "command -v node && command -v npm" "apt_install nodejs npm"
step "libnl-route-3-200" "dpkg -s libnl-route-3-200 | grep -q 'Status: install ok installed'" \
    "apt_install libnl-route-3-200"
step "chromium + chromium-driver" "command -v chromium && command -v chromedriver" \
    "apt_install chromium chromium-driver"   # the live page's browser tests (headless, selenium)
step "mosquitto" "command -v mosquitto || test -x /usr/sbin/mosquitto" "apt_install mosquitto"   # MQTT tests
step "/data (chip-core ini files)" "test -d /data -a -w /data" "mkdir -p /data"
step "python-matter-server==$MATTER_SERVER_VERSION" \
    "$PY -c 'import importlib.metadata as m, sys, matter_server.server.server; sys.exit(m.version(\"python-matter-server\") != \"$MATTER_SERVER_VERSION\")'" \
    "$PY -m pip install -q 'python-matter-server[server]==$MATTER_SERVER_VERSION' 'home-assistant-chip-clusters==2024.11.4'"
# chip-core and chip-clusters must be the same release: both ship parts of the `chip` package.
$PY - <<'PYEOF'
import importlib.metadata as m
core, clusters = m.version("home-assistant-chip-core"), m.version("home-assistant-chip-clusters")
assert core == clusters, f"chip-core {core} and chip-clusters {clusters} differ"
import chip.ChipDeviceCtrl, chip.clusters.Objects  # noqa: F401  (both halves import together)
print(f"chip-core {core} and chip-clusters {clusters} import side by side")
PYEOF
step "@matter/main@$MATTERJS_VERSION" \
    "test \"\$(node -p \"require('$MATTERJS_DIR/node_modules/@matter/main/package.json').version\")\" = $MATTERJS_VERSION" \
    "mkdir -p '$MATTERJS_DIR' && (cd '$MATTERJS_DIR' && { test -f package.json || echo '{\"private\": true}' > package.json; } && npm install --silent --no-audit --no-fund @matter/main@$MATTERJS_VERSION)"
PYTHON="$PY" bash scripts/install-home-assistant.sh 2024 2025 8x  # HA 2024.3.3, HA 2025.4.4, python-matter-server 8.1.2
