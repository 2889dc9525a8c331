#!/usr/bin/env bash
# The stored reports of the docs (data/demo/reports/*.json): the `--json` output of each command whose
# routers are trained in memory or by the command itself, so that no exported store holds its numbers;
# scripts/results_tables.py generates the docs' tables and figures from these files.
#   - `forge eval transfer` between the two embedded hosts of the demo store, both directions,
#     zero-shot, at 0.6 / 0.6 (the export holds the routers of 0.1 / 0.2 only, so those reports are
#     generated from the store); the missing features and routers are trained into the store first;
#   - `forge calibrate --budget-tokens 200` (the conditioned Lite router, 5 folds, in memory);
#   - `forge rewards audit --reward consensus` at 0.1 / 0.2 and 0.6 / 0.6 (Lite, 5 folds, in memory).
# Run it on a copy of a fresh demo store (`forge data import && forge store load-demo`), niced:
#   FORGE_STORE=/tmp/copy.duckdb nice -n 10 bash scripts/stored_reports.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=${FORGE:-.venv/bin/forge}
OUT=data/demo/reports
mkdir -p "$OUT"
for direction in "embedded embedded-small" "embedded-small embedded"; do
    set -- $direction
    "$FORGE" eval transfer --from "$1" --to "$2" --lambda-in 0.6 --lambda-out 0.6 --json \
        > "$OUT/transfer_$1_to_$2_0.6_0.6.json"
done
"$FORGE" calibrate --budget-tokens 200 --json > "$OUT/calibrate_budget_200.json"
for weights in "0.1 0.2" "0.6 0.6"; do
    read -r lambda_in lambda_out <<< "$weights"
    "$FORGE" rewards audit --reward consensus --lambda-in "$lambda_in" --lambda-out "$lambda_out" --json \
        > "$OUT/audit_consensus_${lambda_in}_${lambda_out}.json"
done
