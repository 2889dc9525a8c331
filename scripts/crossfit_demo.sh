#!/usr/bin/env bash
# The README's cross-fitted results: `forge eval --protocol crossfit --stage 2` on the embedded
# host's demo store at the three cost weights it reports, at three split seeds (fold and inner-dev
# draws), charging every host call a decision needs (deployment accounting); then the paper's
# answer-only view at split seed 0. Each run also reports the Stage-1 parents (<router>_stage1);
# the last run of each weight prints its gains at every seed and whether they are decidable.
# Results are stored: rerunning prints them again at once, an interrupted run resumes at its first
# missing fold, and the Pareto page reads them. About 3 minutes per run on 2 cores (5 folds;
# Stage 2: 1,000 steps per fold and router).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
mkdir -p data/crossfit
crossfit() {  # lambda_in lambda_out split_seed accounting
    "$FORGE" eval --host embedded --protocol crossfit --folds 5 --stage 2 --lambda-in "$1" --lambda-out "$2" \
        --split-seed "$3" --accounting "$4" --json > "data/crossfit/crossfit_$1_$2_seed$3_$4.json"
}
for weights in "0.1 0.2" "0.6 0.6" "1.5 1.5"; do
    set -- $weights
    for seed in 0 1 2; do
        crossfit "$1" "$2" "$seed" deploy
    done
    "$FORGE" eval --host embedded --protocol crossfit --folds 5 --stage 2 --lambda-in "$1" --lambda-out "$2" \
        --split-seed 2 --accounting deploy
done
for weights in "0.1 0.2" "0.6 0.6" "1.5 1.5"; do
    set -- $weights
    crossfit "$1" "$2" 0 answer
done
