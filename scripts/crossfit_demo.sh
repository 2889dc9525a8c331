#!/usr/bin/env bash
# The cross-fitted results of docs/results.md: `forge eval crossfit --stage 2` on the embedded
# host's demo store at the three cost weights it reports, at three split seeds (fold and inner-dev
# draws), charging every host call a decision needs (deployment accounting); then the paper's
# answer-only view at split seed 0. Each run also reports the Stage-1 parents (<router>_stage1);
# the last run of each weight prints its gains at every seed and whether they are decidable.
# Results are stored: rerunning prints them again at once, an interrupted run resumes where it
# stopped, the Pareto page reads them, and `scripts/results_tables.py` writes the docs' tables from
# them. About 3 minutes per run on 2 cores (5 folds; Stage 2: 1,000 steps per fold and router).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
crossfit() {  # lambda_in lambda_out split_seed accounting
    "$FORGE" eval crossfit --host embedded --folds 5 --stage 2 --lambda-in "$1" --lambda-out "$2" \
        --split-seed "$3" --accounting "$4" --warm-arms 3  # the stored runs: the paper's Stage 1
}
for weights in "0.1 0.2" "0.6 0.6" "1.5 1.5"; do
    set -- $weights
    for seed in 0 1 2; do
        crossfit "$1" "$2" "$seed" deploy
    done
done
for weights in "0.1 0.2" "0.6 0.6" "1.5 1.5"; do
    set -- $weights
    crossfit "$1" "$2" 0 answer
done
