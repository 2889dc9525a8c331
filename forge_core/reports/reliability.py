"""How far a router's confidence can be trusted: its margins on held-out queries, against what
the chosen arm then realized.

Per held-out query, the router's margin in utility units (`forge_core.routing.confidence`: the
chosen arm over the runner-up, an untrained thinking twin left out) is set beside the realized
utility difference of the same two arms; a decision was right when the chosen arm did at least as
well as the runner-up. Queries are grouped into margin deciles (fewer groups when margins tie), so
a margin seen live reads as "N% of held-out decisions with this margin were right".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from forge_core.errors import MissingStep
from forge_core.policies.context import EvalContext
from forge_core.policies.routers import RouterPolicy
from forge_core.routing.checkpoints import LoadedCheckpoint, load_checkpoint
from forge_core.routing.confidence import checkpoint_tau, margins, reliability_table
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostNormalizer, CostWeights
from forge_core.store import Store


@dataclass(frozen=True)
class Reliability:
    """A checkpoint's reliability table on its held-out (test) queries at one pair of weights."""

    checkpoint_id: str
    weights: CostWeights
    table: pd.DataFrame  # RELIABILITY_COLUMNS, one row per margin bin


@dataclass(frozen=True)
class ReliabilityBase:
    """What a checkpoint's reliability tables share at every weight: its held-out test queries,
    their costs' normalizer and features, and the loaded router (`reliability_at` then only routes)."""

    checkpoint_id: str
    lineage: dict
    context: EvalContext  # the test queries (at the default weights: `reliability_at` moves them)
    policy: RouterPolicy  # fitted on `context`


def checkpoint_reliability(store: Store, checkpoint_id: str, weights: CostWeights | None = None) -> Reliability:
    """The reliability table of a checkpoint on its host's complete test queries of its own split
    seed (with probes for a Full router), at its own weights or, for a cost-conditioned router,
    at `weights` (default 0.1 / 0.2), costs normalized by its train maxima."""
    return reliability_at(reliability_base(store, checkpoint_id), weights)


def checkpoint_outcomes(store: Store, checkpoint: LoadedCheckpoint) -> tuple[OutcomeTable, CostNormalizer]:
    """The outcomes of a checkpoint's host as it was trained on them (its alphabet, split seed and
    benchmarks; for a Full router the queries with probes only) and their costs' normalizer, fitted
    on the train rows of all of them."""
    lineage = checkpoint.lineage
    table = load_outcome_table(store, lineage["host"], int(checkpoint.record["n_arms"]),
                               int(lineage.get("split_seed", 0)), lineage.get("benchmarks"))
    normalizer = table.fit_normalizer()
    if checkpoint.variant == "full":
        table = table.subset(table.has_probes)
    return table, normalizer


def reliability_base(store: Store, checkpoint_id: str) -> ReliabilityBase:
    """The weight-free part of `checkpoint_reliability`: the checkpoint loaded and fitted on its
    host's complete test queries (refused without any)."""
    checkpoint = load_checkpoint(store, checkpoint_id)
    host = checkpoint.lineage["host"]
    table, normalizer = checkpoint_outcomes(store, checkpoint)
    test = table.split("test")
    if not len(test):
        raise MissingStep(f"host '{host}' has no complete test queries to measure {checkpoint_id}'s margins on")
    context = EvalContext(store, test, normalizer, CostWeights())
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    policy.fit(context)
    return ReliabilityBase(checkpoint_id, checkpoint.lineage, context, policy)


def reliability_at(base: ReliabilityBase, weights: CostWeights | None = None) -> Reliability:
    """`checkpoint_reliability` from its weight-free part: at the checkpoint's own weights or, for
    a cost-conditioned router, at `weights` (default 0.1 / 0.2)."""
    from forge_core.reports.action_map import map_weights

    drawn_at = map_weights(base.lineage, weights)
    context = base.context.at(drawn_at)
    rows = np.arange(len(context.table))
    chosen, runner_up, margin = margins(base.policy.probabilities(context, rows), tuple(context.table.arms),
                                        checkpoint_tau(base.lineage))
    utility = context.utility
    realized = utility[rows, chosen] - utility[rows, runner_up]
    return Reliability(base.checkpoint_id, drawn_at, reliability_table(margin, realized))
