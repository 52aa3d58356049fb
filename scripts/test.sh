#!/usr/bin/env bash
# Install the project with its test extras, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test]'
python -m pytest -q "$@"
