#!/usr/bin/env bash
# The README's cross-fitted results: `forge eval --protocol crossfit --stage 2` on the embedded
# host's demo store at the three cost weights it reports (each run also reports the Stage-1
# parents, named <router>_stage1). Results are stored: rerunning prints them again at once,
# an interrupted run resumes at its first missing fold, and the Pareto page reads them.
# About 3 minutes per weight on 2 cores (5 folds; Stage 2: 1,000 steps per fold and router).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
mkdir -p data/crossfit
for weights in "0.1 0.2" "0.6 0.6" "1.5 1.5"; do
    set -- $weights
    "$FORGE" eval --host embedded --protocol crossfit --folds 5 --stage 2 --lambda-in "$1" --lambda-out "$2" \
        --split-seed 0 --json > "data/crossfit/crossfit_$1_$2.json"
    "$FORGE" eval --host embedded --protocol crossfit --folds 5 --stage 2 --lambda-in "$1" --lambda-out "$2" \
        --split-seed 0
done
