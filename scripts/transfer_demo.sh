#!/usr/bin/env bash
# The transfer results of docs/results.md: `forge eval transfer` between the two embedded hosts of the demo
# store, both directions, zero-shot and calibrated on K = 25, 50, 100 and 200 target queries drawn
# from the target's train split (deployment accounting, the test split evaluated), at the default
# weights 0.1 / 0.2 and at 0.6 / 0.6. Each JSON report goes to data/transfer/; the calibrated
# routers are stored as checkpoints of the target host. Missing features and routers are trained
# first (a minute or two per host and weight pair).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
mkdir -p data/transfer
for direction in "embedded embedded-small" "embedded-small embedded"; do
    set -- $direction
    for weights in "0.1 0.2" "0.6 0.6"; do
        read -r lambda_in lambda_out <<< "$weights"
        "$FORGE" eval transfer --from "$1" --to "$2" --lambda-in "$lambda_in" --lambda-out "$lambda_out" \
            --calibrate 25 --calibrate 50 --calibrate 100 --calibrate 200 --json \
            > "data/transfer/transfer_$1_to_$2_${lambda_in}_${lambda_out}.json"
    done
done
