#!/usr/bin/env bash
# The README's test command: install the project with its test extras and everything the
# real-controller tests need (system packages, python-matter-server, matter.js), then run
# the whole suite. pytest's exit code 5 ("no tests collected") fails like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test]'
bash scripts/install-test-deps.sh
python -m pytest -q "$@"
