#!/usr/bin/env bash
# The README's test command (run as root: it installs system packages). Creates the project's
# virtual environment `.venv` unless one is active, installs the project with its test extras
# and everything the real-controller tests need (system packages, python-matter-server,
# matter.js, Home Assistant), checks the code (ruff; mypy, strict on the protocol package),
# then runs the whole suite on every core (pytest-xdist). Arguments go to pytest, e.g. `bash scripts/test.sh -m unit`
# for the fast suite (sizes and times: docs/performance.md). pytest's exit code 5 ("no tests collected") fails too.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then
    if [ ! -x .venv/bin/python ]; then
        # Debian's python3 needs python3-venv for `-m venv` (and refuses pip outside a venv).
        python3 -m venv .venv 2>/dev/null || {
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv .venv; }
        echo '*' > .venv/.gitignore
    fi
    export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"
fi
python -m pip install -q -e '.[test]'
bash scripts/install-test-deps.sh
python -m ruff check .
python -m mypy
# One worker per core; a test file stays on one worker, so its module fixtures (a namespace's
# nodes, a venv) are built once. PYTEST_WORKERS=0 runs in this process.
python -m pytest -q -n "${PYTEST_WORKERS:-auto}" --dist loadfile "$@"
