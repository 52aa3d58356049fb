#!/usr/bin/env bash
# Installs Home Assistant core and the Matter controller its release pins, for
# tests/e2e/test_e2e_home_assistant.py, into separate git-ignored venvs. Two releases ("sets"):
#   2024  HA 2024.3.3 (the newest on Python 3.11) + python-matter-server 5.7.0 in .cache/ha-venv.
#         Its Matter client speaks schema 8; the project's python-matter-server 7.0.1 is refused.
#         Needs josepy<2 (else every HTTP request answers 500).
#   2025  HA 2025.4.4 (the newest on pyenv's Python 3.13.0: later releases need 3.13.2) in
#         .cache/ha2025-venv, with the python-matter-server 7.0.0 client its Matter integration
#         pins; the 7.0.0 server runs from its own venv, .cache/ha2025-server-venv (its [server]
#         extra pins aiohttp, cryptography, orjson and zeroconf versions HA 2025.4.4 pins
#         differently), as in a real home where the Matter server is a separate add-on.
#   8x    python-matter-server 8.1.2 (server; CHIP SDK wheel 2025.7.0) on Python 3.13 in
#         .cache/ha2025-server8-venv, for HA 2025.4.4 (set 2025): no HA that installs here pins
#         8.x, and 2025.4.4's 7.0.0 client speaks its schema (11).
# Usage: install-home-assistant.sh [2024] [2025] [8x]   (no argument: all; or HA_SETS="2024 2025")
# HA then runs with --skip-pip (offline), so the requirements of the integrations it always
# loads are installed here, at the versions HA pins (read from the installed package by
# tests/homeassistant/ha_requirements.py, with HA's package_constraints.txt as constraints).
# python-matter-server 5.7.0 pings a node before subscribing: Debian iputils-ping.
# Idempotent: every step checks first and is skipped when already done. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python}
SETS=${*:-${HA_SETS:-2024 2025 8x}}

source scripts/steps.sh

# pip's index warnings about absent mirror folders are noise; real errors still fail the step.
pip_quiet() { local py=$1; shift; "$py" -m pip install -q "$@" 2>&1 | { grep -v 'is ignored: it is neither' || true; }; return "${PIPESTATUS[0]}"; }
# True when every NAME==VERSION is what the venv's python has installed.
has_versions() { "$1" -c 'import importlib.metadata as m, sys; sys.exit(not all(m.version(n) == v for n, v in (a.split("==") for a in sys.argv[1:])))' "${@:2}"; }

# A Python 3.13 for the 2025 and 8x sets: on PATH, pyenv's (these machines have 3.13.0), or,
# where there is none (Debian 12 ships 3.11), one that uv installs (uv from PyPI; it fetches a
# standalone CPython build into ~/.local/share/uv).
python313() {
    local p
    for p in "${PYTHON313:-}" "$(command -v python3.13 || true)" "$HOME"/.pyenv/versions/3.13.*/bin/python \
             "$("$PY" -m uv python find 3.13 2>/dev/null || true)"; do
        # (pyenv's shim is on PATH even where it cannot run 3.13: try each one)
        if [ -n "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
            echo "$p"; return
        fi
    done
    if pip_quiet "$PY" uv >&2 && "$PY" -m uv python install 3.13 >&2 && p=$("$PY" -m uv python find 3.13); then
        echo "$p"; return
    fi
    echo "install-home-assistant.sh: HA 2025.4.4 needs Python 3.13, and uv could not install one" \
         "(set PYTHON313 to a Python 3.13, or 'pyenv install 3.13')" >&2
    return 1
}

# install_server VERSION PYTHON VENV: python-matter-server[server] in a venv of its own.
install_server() {
    local version=$1 py=$2 venv=$3 spy="$3/bin/python"
    step "venv $(basename "$venv")" "test -x '$spy'" "'$py' -m venv '$venv' && pip_quiet '$spy' --upgrade pip"
    step "matter-server==$version" \
        "has_versions '$spy' python-matter-server==$version && '$spy' -c 'import matter_server.server.server'" \
        "pip_quiet '$spy' 'python-matter-server[server]==$version'"
    "$spy" -c 'import importlib.metadata as m, sys, matter_server.server.const
print("python-matter-server (server)", m.version("python-matter-server"), "on Python", sys.version.split()[0] + ",",
      "chip-core", m.version("home-assistant-chip-core"))'
}

# install_set HA_VERSION SERVER_VERSION PYTHON HA_VENV SERVER_VENV EXTRA_PINS...
# SERVER_VENV may be HA_VENV (python-matter-server[server] installs beside HA).
install_set() {
    local ha_version=$1 server_version=$2 py=$3 ha_venv=$4 server_venv=$5; shift 5
    local vpy="$ha_venv/bin/python" extra=("$@") constraints
    step "venv $(basename "$ha_venv")" "test -x '$vpy'" "'$py' -m venv '$ha_venv' && pip_quiet '$vpy' --upgrade pip"
    if [ "$server_venv" = "$ha_venv" ]; then
        step "homeassistant==$ha_version" \
            "has_versions '$vpy' homeassistant==$ha_version python-matter-server==$server_version && '$vpy' -c 'import matter_server.server.server'" \
            "pip_quiet '$vpy' 'homeassistant==$ha_version' 'python-matter-server[server]==$server_version' ${extra[*]@Q}"
    else
        step "homeassistant==$ha_version" "has_versions '$vpy' homeassistant==$ha_version" \
            "pip_quiet '$vpy' 'homeassistant==$ha_version' ${extra[*]@Q}"
    fi
    # HA's own pins, read from the installed package: frontend, recorder, http, matter, ...
    constraints=$("$vpy" -c 'import homeassistant, pathlib; print(pathlib.Path(homeassistant.__file__).parent / "package_constraints.txt")')
    step "HA $ha_version integration reqs" \
        "'$vpy' tests/homeassistant/ha_requirements.py --unmet" \
        "'$vpy' tests/homeassistant/ha_requirements.py > '$ha_venv/ha-requirements.txt' && pip_quiet '$vpy' -r '$ha_venv/ha-requirements.txt' -c '$constraints' ${extra[*]@Q}"
    "$vpy" -c 'import importlib.metadata as m, sys, homeassistant.const
print("homeassistant", m.version("homeassistant"), "on Python", sys.version.split()[0] + ",",
      "python-matter-server (client)", m.version("python-matter-server"))'
    install_server "$server_version" "$py" "$server_venv"
}

for set in $SETS; do
    case $set in 2024|2025|8x) ;; *) echo "install-home-assistant.sh: unknown set '$set' (2024, 2025 or 8x)" >&2; exit 2 ;; esac
done
step "iputils-ping (ping6)" "command -v ping6 || dpkg -s iputils-ping | grep -q 'Status: install ok installed'" \
    "apt_install iputils-ping"
step "libnl-route-3-200" "dpkg -s libnl-route-3-200 | grep -q 'Status: install ok installed'" \
    "apt_install libnl-route-3-200"
step "/data (chip-core ini files)" "test -d /data -a -w /data" "mkdir -p /data"

for set in $SETS; do
    case $set in
        2024) install_set 2024.3.3 5.7.0 "$PY" "${HA_VENV:-$ROOT/.cache/ha-venv}" "${HA_VENV:-$ROOT/.cache/ha-venv}" 'josepy<2' ;;
        2025) PY313=${PY313:-$(python313)}   # an assignment, so a failure stops the script here
              install_set 2025.4.4 7.0.0 "$PY313" "$ROOT/.cache/ha2025-venv" "$ROOT/.cache/ha2025-server-venv" ;;
        8x) PY313=${PY313:-$(python313)}
            install_server 8.1.2 "$PY313" "$ROOT/.cache/ha2025-server8-venv" ;;
    esac
done
