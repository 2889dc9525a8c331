"""The enumeration table as aligned matrices: rows are queries, columns arms in action order.

Only complete queries (every arm of the alphabet stored without error) enter the table, so
every policy is scored on the same queries and every cost is a measured one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from forge_core.arms import alphabet
from forge_core.data.catalog import check_benchmarks
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_name_for_hash, retriever_option
from forge_core.records import SAMPLE_PROBES
from forge_core.routing.utility import CostNormalizer, CostWeights, pareto_utility
from forge_core.store import Store

Key = tuple[str, str]  # (benchmark, example_id)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@dataclass(frozen=True)
class OutcomeTable:
    """Per-query outcomes of one host on one alphabet."""

    host: str
    arms: tuple[str, ...]  # arm names in action-index order
    keys: tuple[Key, ...]
    splits: np.ndarray  # [N] "train" / "dev" / "test" / "unassigned"
    f1: np.ndarray  # [N, K] fractions
    em: np.ndarray  # [N, K]
    tokens_in: np.ndarray  # [N, K]
    tokens_out: np.ndarray  # [N, K]
    latency_ms: np.ndarray  # [N, K]; NaN for outcomes stored from a batch (no latency)
    sample_tokens_in: np.ndarray  # [N] input tokens of the three sample probes (NaN: no complete probes)
    sample_tokens_out: np.ndarray  # [N] their output tokens (the greedy probe is the direct:no_think call)
    probe_latency_ms: np.ndarray  # [N] latency of the slowest probe (they run concurrently)
    answers: np.ndarray  # [N, K] the generated answer texts (object array)
    retriever_hash: str = ""  # the evidence of its Summary and Raw arms ("": the default BM25)
    retriever: str = DEFAULT_RETRIEVER  # a name of that retriever, for the commands messages suggest

    @cached_property
    def benchmarks(self) -> np.ndarray:
        """[N] benchmark of each row (read-only: made once, read by every policy of a step)."""
        return _read_only(np.array([benchmark for benchmark, _ in self.keys]))

    @cached_property
    def example_ids(self) -> np.ndarray:
        """[N] example id of each row (read-only)."""
        return _read_only(np.array([example_id for _, example_id in self.keys], dtype=object))

    @property
    def has_probes(self) -> np.ndarray:
        """[N] True where a query has all four probes stored."""
        return ~np.isnan(self.sample_tokens_in)

    @property
    def cost(self) -> np.ndarray:
        """[N, K] tokens in + out of each arm."""
        return self.tokens_in + self.tokens_out

    def __len__(self) -> int:
        return len(self.keys)

    def data_hash(self) -> str:
        """The sha256 (hex) of what an evaluation of these rows reads: the query keys, F1 and tokens
        in and out (a crossfit run's id and a deployment manifest's data version)."""
        data = hashlib.sha256(repr(self.keys).encode())
        for matrix in (self.f1, self.tokens_in, self.tokens_out):
            data.update(np.ascontiguousarray(matrix, dtype=np.float64).tobytes())
        return data.hexdigest()

    def subset(self, mask: np.ndarray) -> OutcomeTable:
        """The rows where `mask` is true."""
        indices = np.flatnonzero(mask)
        return OutcomeTable(
            self.host, self.arms, tuple(self.keys[i] for i in indices), self.splits[indices],
            self.f1[indices], self.em[indices], self.tokens_in[indices], self.tokens_out[indices],
            self.latency_ms[indices], self.sample_tokens_in[indices], self.sample_tokens_out[indices],
            self.probe_latency_ms[indices],
            self.answers[indices], self.retriever_hash, self.retriever,
        )

    def split(self, name: str) -> OutcomeTable:
        """The rows of one split."""
        return self.subset(self.splits == name)

    def utility(self, normalizer: CostNormalizer, weights: CostWeights) -> np.ndarray:
        """[N, K] Pareto utility under the given cost weights."""
        c_in, c_out = normalizer.transform(self.tokens_in, self.tokens_out)
        return pareto_utility(self.f1, c_in, c_out, weights)

    def fit_normalizer(self) -> CostNormalizer:
        """Cost maxima over this table's train rows (refuses to fit anywhere else)."""
        train = self.split("train")
        if not len(train):
            raise MissingStep(f"host '{self.host}' has no complete train queries: run `forge enumerate --host "
                              f"{self.host} --split train{retriever_option(self.retriever)}`")
        return CostNormalizer.fit(train.tokens_in, train.tokens_out, split="train")


def load_outcome_table(store: Store, host: str, n_arms: int = 6, split_seed: int = 0,
                       benchmarks: Sequence[str] | None = None, labeled_only: bool = True,
                       retriever_hash: str = "") -> OutcomeTable:
    """The complete queries of a host on the `n_arms` alphabet under one retriever configuration
    (its hash; default: the BM25 evidence), sorted by benchmark and id; only those of `benchmarks`
    when given (default: every benchmark the host has outcomes on). Outcomes under other evidence
    never enter (Direct arms, which use none, serve every retriever). With `labeled_only` False,
    queries without gold answers stay in, their F1 and EM NaN (training on a proxy reward replaces
    them)."""
    arms = tuple(arm.name for arm in alphabet(n_arms))
    outcomes = store.arm_outcomes(host, retriever_hash=retriever_hash)
    if benchmarks is not None:
        outcomes = outcomes[outcomes["benchmark"].isin(check_benchmarks(store, benchmarks))]
    if outcomes.empty:
        chosen = f" on {', '.join(benchmarks)}" if benchmarks is not None else ""
        option = retriever_option(retriever_name_for_hash(store, retriever_hash))
        raise MissingStep(f"no outcomes for host '{host}'{chosen}: run `forge enumerate --host {host}{option}` "
                         "or `forge store load-demo`")
    outcomes = outcomes[outcomes["error"].isna() & outcomes["arm"].isin(arms)]
    wide = outcomes.pivot(index=["benchmark", "example_id"], columns="arm",
                          values=["f1", "em", "tokens_in", "tokens_out", "latency_ms"])  # one row per key
    if wide.empty or not set(arms) <= set(wide["f1"].columns):
        raise InvalidInput(f"host '{host}' has no query with all {n_arms} arms stored")
    # complete: every arm measured; latency may be missing (outcomes stored from a batch have none)
    measured = ("f1", "em", "tokens_in", "tokens_out")[0 if labeled_only else 2:]
    complete = wide.dropna(subset=[(field, arm) for field in measured for arm in arms])
    if complete.empty and labeled_only and wide["tokens_in"][list(arms)].notna().all(axis=1).any():
        raise InvalidInput(f"host '{host}' has no query with gold answers and all {n_arms} arms stored: F1 needs "
                           "gold answers (`forge eval` scores only such queries; to train without them, use a proxy "
                           "reward: --reward consensus or judge)")
    if complete.empty:
        raise InvalidInput(f"host '{host}' has no query with all {n_arms} arms stored")
    wide = complete
    keys = list(wide.index)
    splits = _split_labels(store, keys, split_seed)
    sample_in, sample_out, probe_latency = _probe_costs(store, host, keys)
    f1, em, tokens_in, tokens_out, latency = (
        wide[field][list(arms)].to_numpy(dtype=np.float64)
        for field in ("f1", "em", "tokens_in", "tokens_out", "latency_ms"))
    answers = outcomes.pivot(index=["benchmark", "example_id"], columns="arm", values="answer")
    answers = answers.loc[wide.index, list(arms)].to_numpy(dtype=object)
    return OutcomeTable(host, arms, tuple(keys), splits, f1, em, tokens_in, tokens_out, latency,
                        sample_in, sample_out, probe_latency, answers, retriever_hash,
                        retriever_name_for_hash(store, retriever_hash))


def _split_labels(store: Store, keys: list[Key], split_seed: int) -> np.ndarray:
    table = store.split_table(split_seed)
    # `tolist` first: iterating an Arrow-backed column makes a Python object per value, slowly
    lookup = dict(zip(zip(table["benchmark"].tolist(), table["example_id"].tolist()), table["split"].tolist()))
    return np.array([lookup.get(key, "unassigned") for key in keys])


def _probe_costs(store: Store, host: str, keys: list[Key]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per key: input and output tokens of the three sample probes and the slowest probe's latency,
    NaN where a query lacks one of its four probes. The greedy probe's tokens are not summed: it is
    the same request as the direct:no_think arm, whose outcome the table holds."""
    probes = store.probe_outcomes(host)
    probes = probes[probes["error"].isna()] if not probes.empty else probes
    if probes.empty:
        missing = np.full(len(keys), np.nan)
        return missing, missing.copy(), missing.copy()
    samples = probes["probe"].isin(SAMPLE_PROBES)
    probes = probes.assign(sample_in=probes["tokens_in"].where(samples, 0),
                           sample_out=probes["tokens_out"].where(samples, 0))
    grouped = probes.groupby(["benchmark", "example_id"]).agg(
        n=("probe", "count"), sample_in=("sample_in", "sum"), sample_out=("sample_out", "sum"),
        latency=("latency_ms", "max"))
    complete = grouped[grouped["n"] >= 1 + len(SAMPLE_PROBES)]
    frame = complete.reindex(pd.MultiIndex.from_tuples(keys, names=["benchmark", "example_id"]))
    return tuple(frame[column].to_numpy(dtype=np.float64) for column in ("sample_in", "sample_out", "latency"))
