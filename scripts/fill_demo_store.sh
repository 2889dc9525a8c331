#!/usr/bin/env bash
# Grow the demo store: enumerate the embedded default host (Qwen2.5-Coder-1.5B) with 6 arms and
# probes in stages, test queries first, so a partial run still covers every benchmark and split.
# Resumable: rerun it and it continues where it stopped. Export with `forge store export`.
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=.venv/bin/forge
run() { "$FORGE" enumerate --host embedded --arms 6 --probes --concurrency 1 "$@"; }
run --split test --per-benchmark 20
run --split train --per-benchmark 20
run --split dev --per-benchmark 8
run --split train --per-benchmark 60
run --split test --per-benchmark 50
run --split dev --per-benchmark 20
run --split train --per-benchmark 300
run --split dev --per-benchmark 100
run --split all
