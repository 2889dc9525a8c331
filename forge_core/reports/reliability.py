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
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.confidence import TAU, UNTRAINED_TOLERANCE
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

N_BINS = 10  # margin deciles
RIGHT_TOLERANCE = 1e-9  # the chosen arm is right when it realizes at least the runner-up's utility minus this
COLUMNS = ("low", "high", "queries", "mean_margin", "realized_difference", "share_right")


def margins(probabilities: np.ndarray, arms: tuple[str, ...],
            tau: float = TAU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of [n, K] probabilities: the chosen arm (argmax), the runner-up (the chosen arm's
    untrained thinking twins left out) and the margin tau * (log pi(chosen) - log pi(runner-up))."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    rows = np.arange(len(probabilities))
    chosen = probabilities.argmax(axis=1)
    supports = np.array([arm.split(":", 1)[0] for arm in arms])
    top = probabilities[rows, chosen][:, None]
    same_support = supports[None, :] == supports[chosen][:, None]
    twins = same_support & (np.abs(probabilities - top) <= UNTRAINED_TOLERANCE * top)
    candidates = np.where(twins, -np.inf, probabilities)  # the chosen arm is its own twin: excluded too
    runner_up = candidates.argmax(axis=1)
    logs = np.log(np.maximum(probabilities, 1e-300))
    return chosen, runner_up, tau * (logs[rows, chosen] - logs[rows, runner_up])


def reliability_table(margin: np.ndarray, realized: np.ndarray, bins: int = N_BINS) -> pd.DataFrame:
    """Margin deciles (by rank, so equal margins share a bin) against the realized utility difference
    (chosen minus runner-up) and the share of decisions that were right."""
    margin, realized = np.asarray(margin, dtype=np.float64), np.asarray(realized, dtype=np.float64)
    if not len(margin):
        return pd.DataFrame(columns=list(COLUMNS))
    edges = np.unique(np.quantile(margin, np.linspace(0, 1, bins + 1)))
    groups = np.clip(np.searchsorted(edges, margin, side="right") - 1, 0, max(len(edges) - 2, 0))
    rows = []
    for group in np.unique(groups):
        members = groups == group
        rows.append({"low": float(margin[members].min()), "high": float(margin[members].max()),
                     "queries": int(members.sum()), "mean_margin": float(margin[members].mean()),
                     "realized_difference": float(realized[members].mean()),
                     "share_right": float((realized[members] >= -RIGHT_TOLERANCE).mean())})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def share_right(table: pd.DataFrame, margin: float) -> float | None:
    """The share of held-out decisions that were right in the bin whose margins hold `margin` (the
    nearest bin when it falls between or outside them); None for an empty table."""
    if table.empty:
        return None
    inside = table[(table["low"] <= margin) & (margin <= table["high"])]
    if inside.empty:
        distance = np.minimum(np.abs(table["low"] - margin), np.abs(table["high"] - margin))
        inside = table.iloc[[int(np.argmin(distance))]]
    return float(inside["share_right"].iloc[0])


@dataclass(frozen=True)
class Reliability:
    """A checkpoint's reliability table on its held-out (test) queries at one pair of weights."""

    checkpoint_id: str
    weights: CostWeights
    table: pd.DataFrame  # COLUMNS, one row per margin bin


def checkpoint_reliability(store: Store, checkpoint_id: str, weights: CostWeights | None = None) -> Reliability:
    """The reliability table of a checkpoint on its host's complete test queries of its own split
    seed (with probes for a Full router), at its own weights or, for a cost-conditioned router,
    at `weights` (default 0.1 / 0.2), costs normalized by its train maxima."""
    from forge_core.reports.action_map import map_weights

    checkpoint = load_checkpoint(store, checkpoint_id)
    lineage = checkpoint.lineage
    host = lineage["host"]
    table = load_outcome_table(store, host, int(checkpoint.record["n_arms"]), int(lineage.get("split_seed", 0)),
                               lineage.get("benchmarks"))
    normalizer = table.fit_normalizer()
    if checkpoint.variant == "full":
        table = table.subset(table.has_probes)
    test = table.split("test")
    if not len(test):
        raise MissingStep(f"host '{host}' has no complete test queries to measure {checkpoint_id}'s margins on")
    drawn_at = map_weights(lineage, weights)
    context = EvalContext(store, test, normalizer, drawn_at)
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    policy.fit(context)
    rows = np.arange(len(test))
    chosen, runner_up, margin = margins(policy.probabilities(context, rows), tuple(test.arms))
    utility = context.utility
    realized = utility[rows, chosen] - utility[rows, runner_up]
    return Reliability(checkpoint_id, drawn_at, reliability_table(margin, realized))
