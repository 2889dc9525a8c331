#!/usr/bin/env bash
# Refresh constraints.txt on purpose: resolve the package's dependencies anew in a scratch
# virtual environment (no constraints) and write the versions it installed. Run the tests with
# the new file (`bash scripts/test.sh` in a fresh clone) before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
"${PYTHON:-python3}" -m venv "$SCRATCH/venv"
"$SCRATCH/venv/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
"$SCRATCH/venv/bin/python" -m pip install --quiet "torch==2.13.0"
"$SCRATCH/venv/bin/python" -m pip install --quiet ".[test,ray,gateways]"
{
    echo "# The versions CI tested; scripts/setup.sh installs with -c constraints.txt."
    echo "# Refresh on purpose with: bash scripts/refresh_constraints.sh"
    # the CPU wheel's local label (+cpu) is left out: setup.sh asks for torch==2.13.0
    "$SCRATCH/venv/bin/python" -m pip freeze --exclude-editable | grep -v "^forge-core" | sed 's/+cpu$//'
} > constraints.txt
echo "refresh: wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages)"
