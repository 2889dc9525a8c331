"""Router speed: routing latency (Lite: retrieval, embedding, features, MLP) on one CPU thread,
end to end and piece by piece (BM25, question embedding, passage-vector lookup, MLP), MLP alone,
Stage 1 training time and Stage 2 time per 1,000 steps (table rewards, B = 32, G = 8) on the
store's outcomes. Prints one JSON line last, each figure also as a ratio to the paper's (routing
29.1 ms on one CPU thread; Stage 1 under 2 minutes). The embedder is FORGE_EMBEDDER's (default
all-MiniLM-L6-v2@onnx); one untimed pass over the questions first loads the indexes and the
embedder and keeps their top-1 passages' vectors (`forge index build` keeps every passage's).
Run: `.venv/bin/python bench/router.py [--host embedded] [--queries 100] [--stage2-steps 200]`.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from forge_core import config
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.embedders import embedder_name, load_embedder
from forge_core.routing.features import compute_features, features_for_question
from forge_core.routing.passage_vectors import passage_vectors
from forge_core.routing.live import router_probabilities
from forge_core.store import Store
from forge_core.training.stage2 import Stage2Config, table_reward_fn, train_stage2
from forge_core.training.trainer import TrainRequest, prepare_training_data, train_router

PAPER_ROUTING_MS = 29.1
PAPER_STAGE1_SECONDS = 120.0
PIECES = ("bm25", "question_embedding", "passage_lookup", "mlp")


def routing_latency_ms(store: Store, checkpoint, questions: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Per question, in ms: end-to-end routing (BM25, embedding, features, standardize, MLP, as
    `route_and_answer` routes) and, timed again one by one, each piece."""
    timings: dict[str, list[float]] = {piece: [] for piece in ("routing", *PIECES)}
    embedder = load_embedder()
    for benchmark, question in questions:
        retriever = load_retriever(store, benchmark)
        started = time.perf_counter()
        evidence = retrieve_evidence(retriever, question)
        features = features_for_question(question, retriever, evidence, None, variant="lite")
        router_probabilities(checkpoint, features)
        timings["routing"].append(_ms(started))
        for piece, run in _pieces(retriever, embedder, checkpoint, question, evidence, features):
            started = time.perf_counter()
            run()
            timings[piece].append(_ms(started))
    return timings


def _pieces(retriever, embedder, checkpoint, question, evidence, features):
    """(name, call) of each routing piece for one question."""
    top = evidence.passages[0].document if evidence.passages else None
    vectors = passage_vectors(retriever)
    return [
        ("bm25", lambda: retrieve_evidence(retriever, question)),
        ("question_embedding", lambda: embedder.embed([question])),
        ("passage_lookup", lambda: vectors.vector(top) if top else None),
        ("mlp", lambda: router_probabilities(checkpoint, features)),
    ]


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _percentiles(values: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(values, 50)), 3), "p95": round(float(np.percentile(values, 95)), 3)}


def mlp_latency_us(checkpoint, dim: int, repeats: int = 2000) -> list[float]:
    x = torch.zeros(1, dim)
    timings = []
    with torch.no_grad():
        for _ in range(repeats):
            started = time.perf_counter()
            checkpoint.router.log_probs(x)
            timings.append((time.perf_counter() - started) * 1e6)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--stage2-steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()  # the figures mean something only on an idle machine
    store = Store(config.store_path())

    compute_features(store, args.host)
    started = time.perf_counter()
    full_checkpoint = train_router(store, TrainRequest(host=args.host, variant="full"))
    stage1_seconds = time.perf_counter() - started
    lite = load_checkpoint(store, train_router(store, TrainRequest(host=args.host, variant="lite")))

    data = prepare_training_data(store, args.host, "full", 6)
    train = data.rows("train")
    utility = data.table.utility(data.normalizer, 0.10, 0.20)[train]
    parent = load_checkpoint(store, full_checkpoint)
    stage2_config = Stage2Config(steps=args.stage2_steps, batch_queries=32, num_generations=8, log_every=args.stage2_steps)
    router = load_checkpoint(store, full_checkpoint).router
    started = time.perf_counter()
    train_stage2(router, parent.router, data.features[train], table_reward_fn(utility), stage2_config)
    stage2_per_1000 = (time.perf_counter() - started) * 1000.0 / args.stage2_steps

    questions = []
    for benchmark in ("hotpotqa", "2wikimultihopqa", "musique", "popqa", "fever"):
        ids = store.split_ids(benchmark, "test")[: args.queries // 5]
        questions += [(benchmark, e.question) for e in store.examples(benchmark, ids)]
    # one untimed pass: indexes and embedder loaded, the top-1 passages' vectors kept (all of them
    # are, after `forge index build`)
    routing_latency_ms(store, lite, questions)
    timings = routing_latency_ms(store, lite, questions)
    routing = timings["routing"]
    mlp = mlp_latency_us(lite, lite.lineage["input_dim"])
    result = {
        "host": args.host, "threads": 1, "embedder": embedder_name(), "variant": "lite",
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "routing_queries": len(questions),
        "train_queries": int(len(train)), "dev_queries": int(len(data.rows("dev"))),
        "routing_p50_ms": round(float(np.percentile(routing, 50)), 3),
        "routing_p95_ms": round(float(np.percentile(routing, 95)), 3),
        "pieces_ms": {piece: _percentiles(timings[piece]) for piece in PIECES},
        "passage_vectors_complete": {b: passage_vectors(load_retriever(store, b)).complete
                                     for b in dict.fromkeys(b for b, _ in questions)},
        "mlp_p50_us": round(float(np.percentile(mlp, 50)), 1),
        "stage1_seconds": round(stage1_seconds, 2),
        "stage2_seconds_per_1000_steps": round(stage2_per_1000, 2),
        "routing_ratio_to_paper": round(float(np.percentile(routing, 50)) / PAPER_ROUTING_MS, 3),
        "stage1_ratio_to_paper_budget": round(stage1_seconds / PAPER_STAGE1_SECONDS, 4),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
