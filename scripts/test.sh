#!/usr/bin/env bash
# Run the default test suite (slow and Qwen-model tests are deselected; see pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
