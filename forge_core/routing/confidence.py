"""A router's confidence in utility units, read off its action distribution.

The router is distilled to `softmax(U / tau)`, so `tau * (log pi(a) - log pi(b))` estimates
`U(a) - U(b)`: each arm's implied utility relative to the chosen arm, and the margin of the chosen
arm over the runner-up, are in the units the decision is made in (F1 minus priced tokens).

A thinking head that learned nothing (the FORGE warm start leaves pi(t | s) uniform) gives every
thinking mode of a support the same probability: its `cot` arm then carries its `no_think` twin's
probability exactly. That is not a tie between two arms the router weighed, so the twin is left out
of the runner-up and reported as `untrained_twins`.

On held-out queries the margins are binned into deciles beside the realized utility difference of
the same two arms (`reliability_table`), so a margin reads as "N% of held-out decisions with this
margin were right".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

TAU = 1.0  # the Boltzmann temperature the routers are distilled at (Stage1Config.tau's default)
UNTRAINED_TOLERANCE = 1e-6  # relative: twins closer than this carry one probability (a uniform head)
N_BINS = 10  # margin deciles
RIGHT_TOLERANCE = 1e-9  # the chosen arm is right when it realizes at least the runner-up's utility minus this
RELIABILITY_COLUMNS = ("low", "high", "queries", "mean_margin", "realized_difference", "share_right")


@dataclass(frozen=True)
class Confidence:
    """The chosen arm's standing in utility units."""

    chosen: str
    implied_utility: dict[str, float]  # per arm: tau * (log pi(arm) - log pi(chosen)); the chosen arm 0
    runner_up: str | None  # the best other arm, the chosen arm's untrained twins left out
    margin: float | None  # the chosen arm's implied utility over the runner-up's (>= 0)
    untrained_twins: tuple[str, ...]  # other thinking modes of the chosen support that carry its probability

    def to_json(self) -> dict:
        """JSON-ready, rounded to 6 places."""
        return {"chosen": self.chosen, "runner_up": self.runner_up,
                "margin_utility": None if self.margin is None else round(self.margin, 6),
                "implied_utility": {arm: round(value, 6) for arm, value in self.implied_utility.items()},
                "untrained_thinking_twins": list(self.untrained_twins)}


def checkpoint_tau(lineage: Mapping[str, Any]) -> float:
    """The Boltzmann temperature a checkpoint was distilled at (its lineage's `tau`; `TAU` for a
    lineage that predates it): the factor that turns its log-probability differences into utility."""
    tau = lineage.get("tau")
    return TAU if tau is None else float(tau)


def _support(arm: str) -> str:
    return arm.split(":", 1)[0]


def untrained_twins(probabilities: dict[str, float], arm: str) -> tuple[str, ...]:
    """The other arms of `arm`'s support whose probability equals its own (a uniform thinking head)."""
    own = probabilities[arm]
    return tuple(other for other, p in probabilities.items()
                 if other != arm and _support(other) == _support(arm)
                 and abs(p - own) <= UNTRAINED_TOLERANCE * max(own, p, 1e-300))


def confidence(probabilities: dict[str, float], chosen: str, tau: float = TAU) -> Confidence:
    """The implied utility of every arm relative to `chosen`, and its margin over the runner-up."""
    floor = 1e-300  # a probability of exactly 0 is an implied utility of -inf: floor it
    log_chosen = math.log(max(probabilities[chosen], floor))
    implied = {arm: tau * (math.log(max(p, floor)) - log_chosen) for arm, p in probabilities.items()}
    twins = untrained_twins(probabilities, chosen)
    others = {arm: value for arm, value in implied.items() if arm != chosen and arm not in twins}
    runner_up = max(others, key=others.get) if others else None
    margin = None if runner_up is None else -others[runner_up]
    return Confidence(chosen, implied, runner_up, margin, twins)


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
        return pd.DataFrame(columns=list(RELIABILITY_COLUMNS))
    edges = np.unique(np.quantile(margin, np.linspace(0, 1, bins + 1)))
    groups = np.clip(np.searchsorted(edges, margin, side="right") - 1, 0, max(len(edges) - 2, 0))
    rows = []
    for group in np.unique(groups):
        members = groups == group
        rows.append({"low": float(margin[members].min()), "high": float(margin[members].max()),
                     "queries": int(members.sum()), "mean_margin": float(margin[members].mean()),
                     "realized_difference": float(realized[members].mean()),
                     "share_right": float((realized[members] >= -RIGHT_TOLERANCE).mean())})
    return pd.DataFrame(rows, columns=list(RELIABILITY_COLUMNS))


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
