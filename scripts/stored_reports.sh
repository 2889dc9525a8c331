#!/usr/bin/env bash
# The stored reports of the docs (data/demo/reports/*.json): the `--json` output of each command whose
# routers are trained in memory or by the command itself, so that no store holds its numbers and
# scripts/results_tables.py generates the docs' tables and figures from these files instead.
#   - `forge eval transfer` between the two embedded hosts of the demo store, both directions, zero-shot
#     and calibrated on K = 25, 50, 100 and 200 target queries drawn from the target's train split (3
#     draws per K; deployment accounting, the test split evaluated), at 0.1 / 0.2 and at 0.6 / 0.6;
#     missing features and routers are trained first, the calibrated routers stored as checkpoints of
#     the target host;
#   - `forge calibrate --budget-tokens 200` (the conditioned Lite router, 5 folds);
#   - `forge rewards audit --reward consensus` at 0.1 / 0.2 and 0.6 / 0.6 (Lite, 5 folds).
# Run it on a copy of a fresh demo store (`forge data import && forge store load-demo`), niced: it
# trains routers into that store. Usage: FORGE_STORE=/tmp/copy.duckdb bash scripts/stored_reports.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
OUT=data/demo/reports
mkdir -p "$OUT"
for direction in "embedded embedded-small" "embedded-small embedded"; do
    set -- $direction
    for weights in "0.1 0.2" "0.6 0.6"; do
        read -r lambda_in lambda_out <<< "$weights"
        "$FORGE" eval transfer --from "$1" --to "$2" --lambda-in "$lambda_in" --lambda-out "$lambda_out" \
            --calibrate 25 --calibrate 50 --calibrate 100 --calibrate 200 --json \
            > "$OUT/transfer_$1_to_$2_${lambda_in}_${lambda_out}.json"
    done
done
"$FORGE" calibrate --budget-tokens 200 --json > "$OUT/calibrate_budget_200.json"
for weights in "0.1 0.2" "0.6 0.6"; do
    read -r lambda_in lambda_out <<< "$weights"
    "$FORGE" rewards audit --reward consensus --lambda-in "$lambda_in" --lambda-out "$lambda_out" --json \
        > "$OUT/audit_consensus_${lambda_in}_${lambda_out}.json"
done
