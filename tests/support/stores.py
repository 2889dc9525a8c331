"""Store helpers for the tests: synthetic outcomes on real questions, and a private copy of a
shared fixture's store."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import numpy as np

from forge_core.arms import alphabet
from forge_core.evidence.retrievers import RetrieverConfig, retriever_hash, save_retriever_config
from forge_core.records import ArmOutcome, DraftLogprobs, ProbeOutcome
from forge_core.store import Store, utc_now


def synthetic_outcomes(store: Store, host: str, per_split: dict[str, int], benchmarks: tuple[str, ...],
                       direct_f1_long: float = 0.1) -> None:
    """Test data: arm and probe outcomes for real imported questions, with F1 following a rule a
    router can learn (Raw helps long questions, Direct suffices for short ones) and token costs
    growing with the evidence. Only for tests of training, policies and evaluation.
    `direct_f1_long` is Direct's F1 on long questions: raise it for a host that knows more."""
    rng = np.random.default_rng(0)
    now = utc_now()
    arm_rows, probe_rows, drafts = [], [], []
    for benchmark in benchmarks:
        for split, count in per_split.items():
            ids = store.split_ids(benchmark, split)[:count]
            for example in store.examples(benchmark, ids):
                long_question = len(example.question.split()) > 12
                for arm in alphabet(6):
                    base = {"direct": 0.6 if not long_question else direct_f1_long, "summary": 0.45,
                            "raw": 0.8 if long_question else 0.3}
                    cot_penalty = 0.05 if arm.thinking == "cot" else 0
                    f1 = float(np.clip(base[arm.support] + rng.normal(0, 0.05) - cot_penalty, 0, 1))
                    tokens_in = {"direct": 60, "summary": 260, "raw": 700}[arm.support] + int(rng.integers(0, 40))
                    tokens_out = 8 if arm.thinking == "no_think" else 150
                    arm_rows.append(ArmOutcome(
                        host, benchmark, example.example_id, arm.name, f"answer {f1:.2f}", "x", f1, float(f1 > 0.5),
                        tokens_in, tokens_out, 0, 100.0 + tokens_in, None, 1, "synthetic", now, now))
                drafts.append(synthetic_draft(host, example.benchmark, example.example_id, long_question, now))
                for probe in ("greedy", "sample1", "sample2", "sample3"):
                    text = "I don't know" if long_question else example.answers[0]
                    probe_rows.append(ProbeOutcome(host, benchmark, example.example_id, probe, text, 60, 5,
                                                   80.0, None, "synthetic", now))
    # one frame insert, as enumeration writes its batches (row-by-row inserts took about 15 s of CPU and
    # 50 s of wall time on a loaded 2-core machine for these 2,400 rows; this, under 1 s: the same rows)
    store.write_outcomes(arm_rows, probe_rows)
    store.write_draft_logprobs(*drafts)


def synthetic_draft(host: str, benchmark: str, example_id: str, unsure: bool, now: datetime) -> DraftLogprobs:
    """Test data: a gates' draft of five tokens, its top-2 margin small (0.5) when `unsure`, else large (4.9)."""
    top1, top2 = ((-2.0,) * 5, (-2.5,) * 5) if unsure else ((-0.1,) * 5, (-5.0,) * 5)
    return DraftLogprobs(host, benchmark, example_id, "draft", 60, 5, top1, top2, 80.0, None, "synthetic", now)


def outcomes_under_retriever(store: Store, host: str, config: RetrieverConfig, f1: float) -> str:
    """Test data: save the retriever `config` and copy every Summary and Raw outcome of the host,
    with F1 `f1` (a value no other row has, marking the copies), and the evidence features of the
    default evidence under its configuration hash; returns the hash."""
    from forge_core.evidence.embedders import embedder_name
    from forge_core.routing.features import block_kind

    save_retriever_config(store, config)
    config_hash = retriever_hash(config)
    frame = store.arm_outcomes(host)
    rows = []
    for row in frame[~frame["arm"].str.startswith("direct:")].to_dict("records"):
        fields = {name: row[name] for name in ArmOutcome.__dataclass_fields__}
        rows.append(ArmOutcome(**{**fields, "f1": f1, "retriever_hash": config_hash}))
    store.write_outcomes(rows, [])  # one frame insert (see `synthetic_outcomes`)
    evidence = store.feature_rows("", ["retrieval", block_kind("cosine", embedder_name())])
    store.write_features([("", *row) for row in evidence.itertuples(index=False)], config_hash)
    return config_hash


def copy_store(source: Store, directory: Path) -> Store:
    """A private copy of a store file (for tests that write to a shared fixture's data)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / source.path.name
    shutil.copyfile(source.path, target)
    wal = source.path.with_name(source.path.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, target.with_name(target.name + ".wal"))
    return Store(target)
