#!/usr/bin/env bash
# Train the routers the demo-store results of docs/results.md report, on the embedded host's 6-arm outcomes:
# Stage 1 for Full, Lite and BGE+BM25, then Stage 2 (GRPO and Dr. GRPO, 5,000 steps) from the
# Full and Lite Stage-1 checkpoints, and the cost-conditioned Full and Lite routers of the recommended
# recipe (`forge recipes`; `forge decide` names them). `forge eval` then picks each router's best
# checkpoint on dev.
# Routers are trained on the features of FORGE_EMBEDDER (default all-MiniLM-L6-v2@onnx; `forge
# train` computes what is missing first); rerun this script after changing the embedder.
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=.venv/bin/forge
train() { "$FORGE" train --host embedded --arms 6 "$@"; }
for variant in full lite bge; do
    train --stage 1 --variant "$variant"
done
for variant in full lite; do
    for algorithm in grpo dr_grpo; do
        train --stage 2 --variant "$variant" --algorithm "$algorithm"
    done
done
for variant in full lite; do
    train --stage 1 --variant "$variant" --conditioned  # the recommended recipe's warm start and draws
done
