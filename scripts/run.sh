#!/usr/bin/env bash
# Set up FORGE, pull the default embedded model, load the demo outcomes, open the dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/forge host pull qwen2.5-coder-1.5b
.venv/bin/forge store load-demo
exec .venv/bin/forge app "$@"
