#!/usr/bin/env bash
# Rerun a documented crossfit run of the demo export on a fresh store and compare it with the
# stored one (scripts/reproduce.py; default: lambda 0.6 / 0.6, Stage 2, split seed 0; about 10 min
# on 2 cores). Arguments go to the script, e.g. `--lambda-in 0.1 --lambda-out 0.2 --json`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/reproduce.py "$@"
