"""Router speed: routing latency (Lite: retrieval, embedding, features, MLP) on one CPU thread,
cold and warm, end to end and (warm) piece by piece (BM25, question embedding, passage-vector
lookup, MLP), MLP alone, Stage 1 training time and Stage 2 time per 1,000 steps (table rewards,
B = 32, G = 8) on the store's outcomes.

Cold: each question is routed right after its top-1 passage's vector is dropped from the kept
vectors, as on the first sight of a passage (the passage is embedded during routing). Warm: the
same questions again, every top-1 passage vector kept. Both passes come after an untimed load of
the indexes and the embedder. Prints one JSON line last; `paper_constants` holds the paper's
published figures (routing 29.1 ms on one CPU thread; Stage 1 under 2 minutes), constants not
measured here, and the two `*_over_paper_*` keys divide this run's figures by them.
The question embedding's own time (warm, p50 and p95) is a top-level key, `question_embedding_ms`, and
routing is also given as a ratio to it measured in the same run (p50 over p50, cold and warm), against
the goal of issue #51: warm routing within 2x of the embedding's own time (`goals`: met or not).
The embedder is FORGE_EMBEDDER's (default all-MiniLM-L6-v2@onnx). Needs a store with the demo
loaded (`forge data import && forge store load-demo`); it trains routers into that store, so run
it on a copy: `FORGE_STORE=/tmp/copy.duckdb .venv/bin/python bench/router.py [--host embedded]
[--queries 100] [--stage2-steps 200]`.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
from ratios import goal, ratio

from forge_core import config
from forge_core.evidence.answering import load_retriever, retrieve_evidence
from forge_core.evidence.embedders import embedder_name, load_embedder
from forge_core.evidence.passage_vectors import passage_vectors
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.features import compute_features, features_for_question
from forge_core.routing.live import router_probabilities
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage2Config
from forge_core.training.stage2 import table_reward_fn, train_stage2
from forge_core.training.trainer import prepare_training_data, train_router

PAPER_ROUTING_MS = 29.1  # the paper's routing latency on one CPU thread (a constant, not measured here)
PAPER_STAGE1_SECONDS = 120.0  # the paper's Stage 1 budget, "under 2 minutes" (a constant)
PIECES = ("bm25", "question_embedding", "passage_lookup", "mlp")
GOAL_ROUTING_OVER_EMBEDDING = 2.0  # issue #51: warm routing (p50) within 2x of the question embedding's own time


def route(store: Store, checkpoint, benchmark: str, question: str):
    """Route one question as `route_and_answer` does (BM25, embedding, features, standardize,
    MLP); returns the evidence and the features."""
    retriever = load_retriever(store, benchmark)
    evidence = retrieve_evidence(retriever, question)
    features = features_for_question(question, retriever, evidence, None, variant="lite")
    router_probabilities(checkpoint, features)
    return evidence, features


def cold_routing_ms(store: Store, checkpoint, questions: list[tuple[str, str]]) -> list[float]:
    """Per question, in ms: routing right after its top-1 passage's vector is dropped from the
    kept vectors (first sight of the passage: it is embedded while routing)."""
    timings = []
    for benchmark, question in questions:
        retriever = load_retriever(store, benchmark)
        evidence = retrieve_evidence(retriever, question)
        if evidence.passages:
            vectors = passage_vectors(retriever)
            vectors.filled[vectors.rows[evidence.passages[0].document.doc_id]] = False
        started = time.perf_counter()
        route(store, checkpoint, benchmark, question)
        timings.append(_ms(started))
    return timings


def warm_routing_ms(store: Store, checkpoint, questions: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Per question, in ms, with its top-1 passage's vector kept: end-to-end routing and, timed
    again one by one, each piece."""
    timings: dict[str, list[float]] = {piece: [] for piece in ("routing", *PIECES)}
    embedder = load_embedder()
    for benchmark, question in questions:
        started = time.perf_counter()
        evidence, features = route(store, checkpoint, benchmark, question)
        timings["routing"].append(_ms(started))
        for piece, run in _pieces(load_retriever(store, benchmark), embedder, checkpoint, question, evidence, features):
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
    utility = data.table.utility(data.normalizer, CostWeights(0.10, 0.20))[train]
    parent = load_checkpoint(store, full_checkpoint)
    stage2_config = Stage2Config(steps=args.stage2_steps, batch_queries=32, num_generations=8,
                                 log_every=args.stage2_steps)
    router = load_checkpoint(store, full_checkpoint).router
    started = time.perf_counter()
    train_stage2(router, parent.router, data.features[train], table_reward_fn(utility), stage2_config)
    stage2_per_1000 = (time.perf_counter() - started) * 1000.0 / args.stage2_steps

    questions = []
    for benchmark in ("hotpotqa", "2wikimultihopqa", "musique", "popqa", "fever"):
        ids = store.split_ids(benchmark, "test")[: args.queries // 5]
        questions += [(benchmark, e.question) for e in store.examples(benchmark, ids)]
    # untimed: the indexes and the embedder loaded
    for benchmark in dict.fromkeys(b for b, _ in questions):
        load_retriever(store, benchmark)
    load_embedder().embed(["warm-up"])
    cold = cold_routing_ms(store, lite, questions)
    timings = warm_routing_ms(store, lite, questions)
    warm = timings["routing"]
    mlp = mlp_latency_us(lite, lite.lineage["input_dim"])
    embedding_p50 = float(np.percentile(timings["question_embedding"], 50))
    warm_over_embedding = ratio(float(np.percentile(warm, 50)), embedding_p50)
    result = {
        "host": args.host, "threads": 1, "embedder": embedder_name(), "variant": "lite",
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "routing_queries": len(questions),
        "train_queries": int(len(train)), "dev_queries": int(len(data.rows("dev"))),
        "routing_cold_ms": _percentiles(cold),
        "routing_warm_ms": _percentiles(warm),
        "warm_pieces_ms": {piece: _percentiles(timings[piece]) for piece in PIECES},
        "question_embedding_ms": _percentiles(timings["question_embedding"]),
        "routing_warm_over_embedding": warm_over_embedding,
        "routing_cold_over_embedding": ratio(float(np.percentile(cold, 50)), embedding_p50),
        "goals": {"routing_warm_over_embedding": goal({"warm routing p50": warm_over_embedding},
                                                      GOAL_ROUTING_OVER_EMBEDDING)},
        "mlp_p50_us": round(float(np.percentile(mlp, 50)), 1),
        "stage1_seconds": round(stage1_seconds, 2),
        "stage2_seconds_per_1000_steps": round(stage2_per_1000, 2),
        "paper_constants": {"routing_ms": PAPER_ROUTING_MS, "stage1_budget_seconds": PAPER_STAGE1_SECONDS},
        "warm_p50_over_paper_routing_ms": round(float(np.percentile(warm, 50)) / PAPER_ROUTING_MS, 3),
        "stage1_seconds_over_paper_budget": round(stage1_seconds / PAPER_STAGE1_SECONDS, 4),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
