"""Embedder agreement: is a faster embedder a drop-in for the one the stored routers were trained on?

Computes the features of every enumerated query of the host under both embedders (only what is
missing), then reports (1) the cosine between the two embeddings of every stored question and
(2) for every stored Lite and Full router trained on the reference embedder, the share of test
queries on which it picks the same arm from the candidate embedder's features as from the
reference's. A measurement only: the product never feeds a router features of another embedder.
Prints one JSON line last.
Run: `.venv/bin/python bench/embedder_agreement.py [--host embedded] [--candidate all-MiniLM-L6-v2@onnx]
[--reference all-MiniLM-L6-v2]`.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from forge_core import config
from forge_core.evidence.embedders import DEFAULT_EMBEDDER, MINILM, embedder_name
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.features import assemble_features, compute_features
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.store import Store


def embedding_cosines(store: Store, host: str, keys: list, candidate: str, reference: str) -> np.ndarray:
    """Per key: cosine between the two stored question embeddings (both are L2-normalized)."""
    ours = assemble_features(store, host, "bge", keys, candidate)
    theirs = assemble_features(store, host, "bge", keys, reference)
    dim = ours.shape[1] - 5  # bge = embedding + 4 retrieval + 1 cosine
    return (ours[:, :dim] * theirs[:, :dim]).sum(axis=1)


def decision_agreement(store: Store, host: str, checkpoint_id: str, candidate: str, reference: str) -> dict:
    """Share of the checkpoint's test queries routed to the same arm under both embedders."""
    checkpoint = load_checkpoint(store, checkpoint_id)
    table = load_outcome_table(store, host, int(checkpoint.record["n_arms"]), int(checkpoint.lineage["split_seed"]))
    if checkpoint.variant == "full":
        table = table.subset(table.has_probes)
    keys = list(table.split("test").keys)
    actions = []
    for embedder in (reference, candidate):
        x = checkpoint.standardizer.transform(assemble_features(store, host, checkpoint.variant, keys, embedder))
        with torch.no_grad():
            actions.append(checkpoint.router.log_probs(torch.as_tensor(x)).argmax(dim=1).numpy())
    return {"variant": checkpoint.variant, "stage": int(checkpoint.record["stage"]), "test_queries": len(keys),
            "same_decision": round(float((actions[0] == actions[1]).mean()), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded")
    parser.add_argument("--candidate", default=DEFAULT_EMBEDDER)
    parser.add_argument("--reference", default=MINILM)
    args = parser.parse_args()
    torch.set_num_threads(1)
    store = Store(config.store_path())
    for embedder in (args.reference, args.candidate):
        compute_features(store, args.host, embedder=embedder)
    keys = list(load_outcome_table(store, args.host, 6).keys)
    cosines = embedding_cosines(store, args.host, keys, args.candidate, args.reference)
    frame = store.checkpoints(args.host)
    reference = embedder_name(args.reference)
    routers = [row.checkpoint_id for row in frame.itertuples()
               if json.loads(row.lineage)["embedder"] == reference and row.variant in ("lite", "full")]
    result = {
        "host": args.host, "candidate": embedder_name(args.candidate), "reference": embedder_name(args.reference),
        "questions": len(keys), "cosine_min": round(float(cosines.min()), 6),
        "cosine_p01": round(float(np.percentile(cosines, 1)), 6), "cosine_mean": round(float(cosines.mean()), 6),
        "routers": {c: decision_agreement(store, args.host, c, args.candidate, args.reference) for c in routers},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
