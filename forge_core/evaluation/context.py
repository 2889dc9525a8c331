"""What policies look at when they are fitted and when they decide: the outcome table of the
evaluated host, utilities under the chosen cost weights and the stored features of its rows.

Features are read, never computed here: compute them first with
`forge_core.routing.features.compute_features` (the CLI and the dashboard do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from forge_core.routing.embedders import embedder_name
from forge_core.routing.features import assemble_features, feature_names
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostNormalizer
from forge_core.store import Store

LIVE_ROW = np.zeros(1, dtype=np.int64)  # the single row of a live query's context


@dataclass
class EvalContext:
    """What policies may look at: the outcome table, utilities and features of its rows."""

    store: Store
    table: OutcomeTable
    normalizer: CostNormalizer
    lambda_in: float
    lambda_out: float
    _features: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (variant, embedder name)

    @property
    def utility(self) -> np.ndarray:
        """[N, K] utilities under the context's cost weights."""
        return self.table.utility(self.normalizer, self.lambda_in, self.lambda_out)

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
            self._features[key] = assemble_features(self.store, self.table.host, variant, self.table.keys, embedder)
        return self._features[key]

    def feature(self, variant: str, name: str) -> np.ndarray:
        """One named structured feature column (raw values)."""
        matrix = self.features(variant)
        structured = feature_names(variant, embedding_dim=0)
        return matrix[:, matrix.shape[1] - len(structured) + structured.index(name)]



@dataclass(frozen=True)
class Decisions:
    """Per evaluated row: the final arm, and the tokens spent before it."""

    actions: np.ndarray  # [n] column index of the answering arm
    extra_tokens: np.ndarray  # [n] tokens of earlier calls (0 for single-call policies)

    @classmethod
    def single(cls, actions: np.ndarray) -> Decisions:
        """Decisions of a policy that makes one call per query."""
        return cls(np.asarray(actions, dtype=np.int64), np.zeros(len(actions)))



def evaluation_context(store: Store, host: str, n_arms: int, lambda_in: float, lambda_out: float,
                       split_seed: int = 0, benchmarks: Sequence[str] | None = None) -> EvalContext:
    """Complete queries with probes (so every policy sees the same rows), only those of
    `benchmarks` when given, and the train normalizer."""
    table = load_outcome_table(store, host, n_arms, split_seed, benchmarks)
    with_probes = ~np.isnan(table.probe_tokens)
    if with_probes.any():
        table = table.subset(with_probes)
    return EvalContext(store, table, table.fit_normalizer(), lambda_in, lambda_out)

