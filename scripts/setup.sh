#!/usr/bin/env bash
# Set up FORGE on a fresh machine: virtual environment, torch (local CPU wheel first), the package
# with its test extras, the benchmark import and the embedded models. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${FORGE_VENV:-.venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
# torch first and pinned: an unpinned torch would pull several GB of CUDA packages.
"$VENV/bin/python" -m pip install --quiet -c constraints.txt "torch==2.13.0"
# exactly the versions CI tested (constraints.txt; `bash scripts/refresh_constraints.sh` renews it)
"$VENV/bin/python" -m pip install --quiet -c constraints.txt -e ".[test]"

"$VENV/bin/forge" data import
"$VENV/bin/forge" host pull smollm2-135m
echo "setup: done"
