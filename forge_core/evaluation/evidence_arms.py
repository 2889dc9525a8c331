"""The host's arms under each retriever, side by side (`forge evidence arms`).

Per retriever configuration, the complete queries of one host and benchmark in one split (every
arm of the alphabet stored under that retriever's evidence; Direct arms, which use none, are
shared) are read with `load_outcome_table`, so no table mixes two evidences. Only the queries
complete under every compared retriever enter, so each arm's F1 and tokens are paired across
retrievers. Per retriever and arm: mean F1 and EM with 95% bootstrap intervals over queries, mean
input and output tokens, and the paired 95% interval of F1 minus the first retriever's on the same
queries; per retriever, the Pareto frontier of its arms over (mean tokens in + out, mean F1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.evidence_compare import MeanInterval
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, get_retriever_config, retriever_hash
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.statistics import paired_bootstrap_ci, pareto_frontier
from forge_core.store import Store


@dataclass(frozen=True)
class EvidenceArmsRequest:
    """Which host, benchmark, split and retrievers to compare (the first is the reference)."""

    host: str = "embedded"
    benchmark: str = "2wikimultihopqa"
    retrievers: tuple[str, ...] = (DEFAULT_RETRIEVER,)
    split: str = "test"
    n_arms: int = 6
    split_seed: int = 0


def compare_arms(store: Store, request: EvidenceArmsRequest) -> dict:
    """Per retriever: each arm's F1, EM and tokens on the queries complete under every retriever,
    F1 minus the first retriever's (paired), and the Pareto frontier of its arms (JSON-ready)."""
    if not request.retrievers:
        raise InvalidInput("name at least one retriever (--retrievers)")
    hashes = {name: retriever_hash(get_retriever_config(store, name)) for name in request.retrievers}
    return compare_arms_of(store, request, hashes)


def compare_arms_of(store: Store, request: EvidenceArmsRequest, hashes: dict[str, str]) -> dict:
    """`compare_arms` for retrievers given by name and configuration hash (the first is the
    reference), e.g. on an exported store that holds the outcomes but not the configurations."""
    request = replace(request, retrievers=tuple(hashes))
    tables = {name: _table(store, request, name, config_hash) for name, config_hash in hashes.items()}
    common = set.intersection(*(set(table.keys) for table in tables.values()))
    if not common:
        raise MissingStep(f"no {request.split} query of {request.benchmark} has all {request.n_arms} arms under every "
                          f"one of {', '.join(request.retrievers)}: run `forge enumerate --retriever NAME`")
    keys = sorted(common)
    aligned = {name: _rows(table, keys) for name, table in tables.items()}
    reference = aligned[request.retrievers[0]]
    return {"host": request.host, "benchmark": request.benchmark, "split": request.split, "queries": len(keys),
            "arms": list(reference.arms), "reference": request.retrievers[0],
            "retrievers": [_retriever_report(name, table, reference) for name, table in aligned.items()]}


def _table(store: Store, request: EvidenceArmsRequest, name: str, config_hash: str) -> OutcomeTable:
    try:
        table = load_outcome_table(store, request.host, request.n_arms, request.split_seed, [request.benchmark],
                                   retriever_hash=config_hash)
    except (InvalidInput, MissingStep):
        raise MissingStep(f"retriever '{name}' has no {request.benchmark} query with all {request.n_arms} arms on "
                          f"host '{request.host}': run `forge enumerate --retriever {name}`") from None
    return table.split(request.split)


def _rows(table: OutcomeTable, keys: Sequence[tuple[str, str]]) -> OutcomeTable:
    position = {key: i for i, key in enumerate(table.keys)}
    mask = np.zeros(len(table), dtype=bool)
    mask[[position[key] for key in keys]] = True
    return table.subset(mask)  # keeps the table's (sorted) key order, the same for every retriever


def _retriever_report(name: str, table: OutcomeTable, reference: OutcomeTable) -> dict:
    groups = np.zeros(len(table))
    arms = []
    for a, arm in enumerate(table.arms):
        f1, reference_f1 = table.f1[:, a], reference.f1[:, a]
        arms.append({"arm": arm, "f1": MeanInterval.of(f1).to_json(), "em": MeanInterval.of(table.em[:, a]).to_json(),
                     "tokens_in": float(table.tokens_in[:, a].mean()),
                     "tokens_out": float(table.tokens_out[:, a].mean()),
                     "f1_minus_reference": float(f1.mean() - reference_f1.mean()),
                     "f1_minus_reference_ci95": list(paired_bootstrap_ci(f1, reference_f1, groups))})
    points = [(arm["tokens_in"] + arm["tokens_out"], arm["f1"]["mean"]) for arm in arms]
    return {"name": name, "config_hash": table.retriever_hash, "arms": arms,
            "pareto_frontier": [arms[i]["arm"] for i in pareto_frontier(points)]}
