#!/usr/bin/env bash
# The README's test command: install the project with its test extras and everything the
# real-controller tests need (system packages, python-matter-server, matter.js), check the
# code (ruff; mypy, strict on the protocol package), then run the whole suite. Arguments go
# to pytest, e.g. `bash scripts/test.sh -m "not e2e"` for the fast suite (about a minute).
# pytest's exit code 5 ("no tests collected") fails like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test]'
bash scripts/install-test-deps.sh
python -m ruff check .
python -m mypy
python -m pytest -q "$@"
