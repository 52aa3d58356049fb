#!/usr/bin/env bash
# Installs Home Assistant core and the Matter controller its release pins, for
# tests/e2e/test_e2e_home_assistant.py, into a separate git-ignored venv (.cache/ha-venv):
# the project's own env has python-matter-server 7.0.1, which HA 2024.3.3 (the newest HA on
# Python 3.11) refuses; its Matter client is python-matter-server 5.7.0 (schema 8).
# HA then runs with --skip-pip (offline), so the requirements of the integrations it always
# loads are installed here, at the versions HA pins (read from the installed package by
# tests/homeassistant/ha_requirements.py, with HA's package_constraints.txt as constraints).
# python-matter-server 5.7.0 pings a node before subscribing: Debian iputils-ping.
# Idempotent: every step checks first and is skipped when already done. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python}
HA_VENV=${HA_VENV:-"$ROOT/.cache/ha-venv"}
HA_VERSION=2024.3.3
HA_MATTER_SERVER_VERSION=5.7.0
VPY="$HA_VENV/bin/python"

source scripts/steps.sh

# pip's index warnings about absent mirror folders are noise; real errors still fail the step.
pip_quiet() { "$VPY" -m pip install -q "$@" 2>&1 | { grep -v 'is ignored: it is neither' || true; }; return "${PIPESTATUS[0]}"; }


step "iputils-ping (ping6)" "command -v ping6 || dpkg -s iputils-ping | grep -q 'Status: install ok installed'" \
    "apt_install iputils-ping"
step "libnl-route-3-200" "dpkg -s libnl-route-3-200 | grep -q 'Status: install ok installed'" \
    "apt_install libnl-route-3-200"
step "/data (chip-core ini files)" "test -d /data -a -w /data" "mkdir -p /data"
step "ha venv" "test -x '$VPY'" "$PY -m venv '$HA_VENV' && pip_quiet --upgrade pip"
step "homeassistant==$HA_VERSION" \
    "'$VPY' -c 'import importlib.metadata as m, sys; v = m.version; sys.exit(not (v(\"homeassistant\") == \"$HA_VERSION\" and v(\"python-matter-server\") == \"$HA_MATTER_SERVER_VERSION\" and int(v(\"josepy\").split(\".\")[0]) < 2))'" \
    "pip_quiet 'homeassistant==$HA_VERSION' 'python-matter-server[server]==$HA_MATTER_SERVER_VERSION' 'josepy<2'"
# HA's own pins, read from the installed package: frontend, recorder, http, matter, ...
CONSTRAINTS=$("$VPY" -c 'import homeassistant, pathlib; print(pathlib.Path(homeassistant.__file__).parent / "package_constraints.txt")')
step "HA integration requirements" \
    "'$VPY' tests/homeassistant/ha_requirements.py --unmet" \
    "'$VPY' tests/homeassistant/ha_requirements.py > '$HA_VENV/ha-requirements.txt' && pip_quiet -r '$HA_VENV/ha-requirements.txt' -c '$CONSTRAINTS' 'josepy<2'"
"$VPY" - <<PYEOF
import importlib.metadata as m
import homeassistant.const, matter_server.server.const  # noqa: F401  (both import)
print(f"homeassistant {m.version('homeassistant')}, python-matter-server {m.version('python-matter-server')}, "
      f"chip-core {m.version('home-assistant-chip-core')}, josepy {m.version('josepy')}")
PYEOF
