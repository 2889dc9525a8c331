"""What policies look at when they are fitted and when they decide: the outcome table of the
evaluated host, utilities under the chosen cost weights and the stored features of its rows;
and what a decision costs under the chosen accounting.

Accounting. `deploy` (the default) charges, per query, every host call the policy's decision
needs on a new query: the four probes of a Full router or Self-Routing (the greedy probe is the
direct:no_think request, so it is counted once when that arm answers), the earlier stages of a
cascade, and the answer; each call charged `CostWeights.charge` of its normalized tokens
(`lambda_in * tokens_in / max_in + lambda_out * tokens_out / max_out`). `answer` is the paper's
Cached view: the answering call only.

Features are read, never computed here: compute them first with
`forge_core.routing.features.compute_features` (the CLI and the dashboard do).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from forge_core.arms import DIRECT_NO_THINK
from forge_core.evidence.embedders import embedder_name
from forge_core.records import SAMPLE_PROBES
from forge_core.routing.features import assemble_features, feature_names
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostNormalizer, CostWeights, check_accounting
from forge_core.store import Store

LIVE_ROW = np.zeros(1, dtype=np.int64)  # the single row of a live query's context
T = TypeVar("T")


@dataclass
class EvalContext:
    """What policies may look at: the outcome table, utilities and features of its rows."""

    store: Store
    table: OutcomeTable
    normalizer: CostNormalizer
    weights: CostWeights
    accounting: str = "deploy"  # "deploy": every call a decision needs; "answer": the answering call only
    _features: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (variant, embedder name)
    _weight_free: dict[tuple, Any] = field(default_factory=dict)  # results the cost weights do not change

    def at(self, weights: CostWeights) -> EvalContext:
        """This context under other cost weights: the same rows, normalizer, features and
        weight-free results (moving the weights recomputes only what depends on them)."""
        return dataclasses.replace(self, weights=weights)

    def weight_free(self, key: tuple, compute: Callable[[], T]) -> T:
        """`compute()` once for this context and its `at` copies: for a fit that does not depend
        on the cost weights (a loaded checkpoint, a classifier on weight-free labels)."""
        if key not in self._weight_free:
            self._weight_free[key] = compute()
        return self._weight_free[key]

    @functools.cached_property
    def utility(self) -> np.ndarray:
        """[N, K] utilities under the context's cost weights, computed once per context (an `at` copy
        computes its own) and read-only (policies read it many times a decision)."""
        utility = self.table.utility(self.normalizer, self.weights)
        utility.flags.writeable = False
        return utility

    def rows(self, split: str) -> np.ndarray:
        """Row indices of one split."""
        return np.flatnonzero(self.table.splits == split)

    def arm(self, name: str) -> int:
        """Column index of an arm."""
        return self.table.arms.index(name)

    def features(self, variant: str, embedder: str | None = None) -> np.ndarray:
        """Raw (unstandardized) features of every row for a variant, under an embedder (default:
        FORGE_EMBEDDER's)."""
        key = (variant, embedder_name(embedder))
        if key not in self._features:
            self._features[key] = assemble_features(self.store, self.table.host, variant, self.table.keys, embedder,
                                                    retriever_hash=self.table.retriever_hash)
        return self._features[key]

    def feature(self, variant: str, name: str) -> np.ndarray:
        """One named structured feature column (raw values)."""
        matrix = self.features(variant)
        structured = feature_names(variant, embedding_dim=0)
        return matrix[:, matrix.shape[1] - len(structured) + structured.index(name)]

    def call_cost(self, tokens_in: np.ndarray, tokens_out: np.ndarray) -> np.ndarray:
        """The utility charge of host calls with these token counts (`CostWeights.charge`)."""
        return self.weights.charge(*self.normalizer.transform(tokens_in, tokens_out))

    def probed_decisions(self, rows: np.ndarray, actions: np.ndarray) -> Decisions:
        """Decisions of a policy that runs the four probes before it decides: the three samples,
        and the greedy probe unless the answer is direct:no_think (the same request, made once)."""
        actions = np.asarray(actions, dtype=np.int64)
        direct = self.arm(DIRECT_NO_THINK)
        greedy_apart = actions != direct
        table = self.table
        return Decisions(
            actions,
            table.sample_tokens_in[rows] + np.where(greedy_apart, table.tokens_in[rows, direct], 0.0),
            table.sample_tokens_out[rows] + np.where(greedy_apart, table.tokens_out[rows, direct], 0.0),
            len(SAMPLE_PROBES) + greedy_apart.astype(np.int64))

    def realized_utility(self, rows: np.ndarray, decisions: Decisions) -> np.ndarray:
        """[n] utility of each row's decision under the context's accounting."""
        answer = self.utility[rows][np.arange(len(rows)), decisions.actions]
        if self.accounting == "answer":
            return answer
        return answer - self.call_cost(decisions.prior_tokens_in, decisions.prior_tokens_out)


@dataclass(frozen=True)
class Decisions:
    """Per evaluated row: the answering arm, and the host calls a new query needs before it
    (probes, earlier cascade stages; never the answering call itself)."""

    actions: np.ndarray  # [n] column index of the answering arm
    prior_tokens_in: np.ndarray  # [n] input tokens of the calls before the answer
    prior_tokens_out: np.ndarray  # [n] their output tokens
    prior_calls: np.ndarray  # [n] how many calls come before the answer
    margin: np.ndarray | None = None  # [n] a router's margin in utility units (`routing.confidence.margins`)
    runner_up: np.ndarray | None = None  # [n] column index of the arm the margin is taken over

    @classmethod
    def single(cls, actions: np.ndarray) -> Decisions:
        """Decisions of a policy that makes one call per query."""
        zeros = np.zeros(len(actions))
        return cls(np.asarray(actions, dtype=np.int64), zeros, zeros.copy(), zeros.astype(np.int64))

    def where(self, keep: np.ndarray, actions: np.ndarray) -> Decisions:
        """These decisions where `keep`, else a single call of `actions` (no earlier calls, no margin)."""
        margin = None if self.margin is None else np.where(keep, self.margin, np.nan)
        runner_up = None if self.runner_up is None else np.where(keep, self.runner_up, -1)
        return Decisions(np.where(keep, self.actions, actions), np.where(keep, self.prior_tokens_in, 0.0),
                         np.where(keep, self.prior_tokens_out, 0.0), np.where(keep, self.prior_calls, 0),
                         margin, runner_up)


def evaluation_context(store: Store, host: str, n_arms: int, weights: CostWeights,
                       split_seed: int = 0, benchmarks: Sequence[str] | None = None,
                       accounting: str = "deploy", retriever_hash: str = "") -> EvalContext:
    """Complete queries with probes (so every policy sees the same rows), only those of
    `benchmarks` when given, under one retriever configuration (its hash; "": the default BM25
    evidence), and the train normalizer."""
    check_accounting(accounting)
    table = load_outcome_table(store, host, n_arms, split_seed, benchmarks, retriever_hash=retriever_hash)
    if table.has_probes.any():
        table = table.subset(table.has_probes)
    return EvalContext(store, table, table.fit_normalizer(), weights, accounting)

