"""The cost-matched static mix of fixed arms: the reference a policy must beat at its own tokens.

A mix sends each query to one of two fixed arms at random, to the second with probability `share`,
whatever the query. Its expected tokens and F1 a query are the two arms' in those proportions, so
the mixes of every pair trace the upper convex hull of the fixed arms on the (tokens, F1) plane
(`mix_hull`). The hull used as the reference runs from the cheapest arm to the arm of highest F1:
past that arm, spending more buys nothing, so the best mix within a budget beyond it is that arm
alone (`best_mix`); below the cheapest arm's tokens no mix spends so little, and there is none.

Means are macro over benchmarks (every crossfit number is), which is linear in the per-query
values: a mix's macro tokens and F1 are its arms' in its proportions, so one share holds for every
benchmark. Per benchmark, the hull is that benchmark's own (`per_benchmark_hulls`).

A policy's gap to the hull (`hull_gap`) is its macro F1 minus the best mix's at the policy's own
macro tokens. The mix's outcome on each query is its two arms' outcomes there in its proportions
(the expectation of the random choice), so the policy and the mix are paired on every query and
the gap's interval is the project's paired bootstrap (`paired_bootstrap_ci`). A policy that is one
of the hull's arms has gap 0 with a zero-width interval.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from forge_core.statistics import Interval, benchmark_masks, macro_over, paired_bootstrap_ci, paired_bootstrap_cis


@dataclass(frozen=True)
class ArmOutcomes:
    """The fixed arms' per-query outcomes on the same queries: one row per arm."""

    names: tuple[str, ...]  # one per arm (a policy name such as always_raw, or an arm)
    f1: np.ndarray  # [arms, queries] F1 as a fraction
    tokens: np.ndarray  # [arms, queries] tokens a query under the report's accounting
    benchmarks: np.ndarray  # [queries] each query's benchmark

    @classmethod
    def of(cls, names: list[str] | tuple[str, ...], outcomes: list, benchmarks: np.ndarray) -> ArmOutcomes:
        """One row per name from its scored outcome (anything with per-query `f1` and `tokens`)."""
        return cls(tuple(names), np.stack([outcome.f1 for outcome in outcomes]),
                   np.stack([outcome.tokens.astype(np.float64) for outcome in outcomes]), benchmarks)

    def points(self) -> list[tuple[float, float]]:
        """Each arm's (macro tokens, macro F1)."""
        return list(self._points)

    @functools.cached_property
    def masks(self) -> list[np.ndarray]:
        """`benchmark_masks` of the queries, made once: every policy's gap is measured against the same arms."""
        return benchmark_masks(self.benchmarks)

    @functools.cached_property
    def _points(self) -> tuple[tuple[float, float], ...]:
        return tuple((macro_over(tokens, self.masks), macro_over(f1, self.masks))
                     for tokens, f1 in zip(self.tokens, self.f1))

    @functools.cached_property
    def hull(self) -> tuple[int, ...]:
        """`upper_hull` of the arms' macro points, made once for these outcomes (not once for each
        policy measured against them: the Pareto page measures every policy's gap at each step)."""
        return tuple(upper_hull(self.points()))

    def of_benchmark(self, benchmark: str) -> ArmOutcomes:
        """The same arms on one benchmark's queries only."""
        mask = self.benchmarks == benchmark
        return ArmOutcomes(self.names, self.f1[:, mask], self.tokens[:, mask], self.benchmarks[mask])


@dataclass(frozen=True)
class Mix:
    """One arm, or two arms mixed at random per query (the second with probability `share`)."""

    arms: tuple[str, ...]  # one or two arm names, cheaper first
    shares: tuple[float, ...]  # each arm's share of the queries (summing to 1)
    tokens: float  # macro tokens a query
    f1: float  # macro F1

    def per_query_f1(self, outcomes: ArmOutcomes) -> np.ndarray:
        """The mix's expected F1 on each query: its arms' F1 there in its proportions."""
        rows = [outcomes.names.index(arm) for arm in self.arms]
        return sum(share * outcomes.f1[row] for share, row in zip(self.shares, rows))

    def to_dict(self) -> dict:
        """JSON-ready: arms, shares, tokens, f1."""
        return {"arms": list(self.arms), "shares": list(self.shares), "tokens": self.tokens, "f1": self.f1}


def upper_hull(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the (tokens, F1) points on the upper convex hull from the cheapest point to the
    point of highest F1, sorted by tokens: the points no mix of two others beats at their tokens
    (a point on or below the chord of its neighbours is left out, as are points that cost at least
    as much as the best point, and a costlier duplicate of a point's tokens)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    hull: list[int] = []
    for i in order:
        if hull and points[hull[-1]][0] == points[i][0]:
            continue  # same tokens, lower F1
        while len(hull) >= 2 and _on_or_below_chord(points[hull[-2]], points[hull[-1]], points[i]):
            hull.pop()
        hull.append(i)
    best = max(range(len(hull)), key=lambda k: (points[hull[k]][1], -k))
    return hull[: best + 1]


def _on_or_below_chord(left: tuple[float, float], middle: tuple[float, float], right: tuple[float, float]) -> bool:
    """Whether `middle` lies on or below the segment from `left` to `right` (tokens increasing)."""
    cross = (middle[0] - left[0]) * (right[1] - left[1]) - (middle[1] - left[1]) * (right[0] - left[0])
    return cross >= 0


def mix_hull(outcomes: ArmOutcomes) -> list[dict]:
    """The hull's vertices (`upper_hull` of the arms' macro points), cheapest first: arm, tokens, f1."""
    points = outcomes.points()
    return [{"arm": outcomes.names[i], "tokens": points[i][0], "f1": points[i][1]} for i in outcomes.hull]


def per_benchmark_hulls(outcomes: ArmOutcomes) -> dict[str, list[dict]]:
    """`mix_hull` of each benchmark's queries alone, in benchmark order."""
    return {str(b): mix_hull(outcomes.of_benchmark(b)) for b in np.unique(outcomes.benchmarks)}


def best_mix(outcomes: ArmOutcomes, target_tokens: float) -> Mix | None:
    """The mix of highest macro F1 that spends at most `target_tokens` a query: the two hull arms
    around the target in the proportions that spend it exactly, or one arm when the target is one
    of the hull's token values; the highest-F1 arm alone at or beyond its tokens; None below the
    cheapest arm's tokens (no mix spends so little)."""
    vertices = mix_hull(outcomes)
    if target_tokens < vertices[0]["tokens"]:
        return None
    for left, right in zip(vertices, vertices[1:]):
        if left["tokens"] <= target_tokens < right["tokens"]:
            if target_tokens == left["tokens"]:
                return Mix((left["arm"],), (1.0,), left["tokens"], left["f1"])
            share = (target_tokens - left["tokens"]) / (right["tokens"] - left["tokens"])
            f1 = (1 - share) * left["f1"] + share * right["f1"]
            return Mix((left["arm"], right["arm"]), (1 - share, share), float(target_tokens), f1)
    last = vertices[-1]
    return Mix((last["arm"],), (1.0,), last["tokens"], last["f1"])


def hull_gap(outcomes: ArmOutcomes, f1: np.ndarray, tokens: np.ndarray) -> dict | None:
    """A policy's gap to the hull at its own macro tokens (`f1`, `tokens`: its per-query values on
    the arms' queries): the best mix there (`best_mix`), the policy's macro F1 minus the mix's and
    the paired bootstrap 95% interval of that difference, with its verdict; None when the policy
    spends fewer tokens than the cheapest arm (no mix to compare with)."""
    masks = outcomes.masks
    mix = best_mix(outcomes, macro_over(tokens, masks))
    if mix is None:
        return None
    reference = mix.per_query_f1(outcomes)
    interval: Interval = paired_bootstrap_ci(f1, reference, outcomes.benchmarks)
    return {"mix": mix.to_dict(), "difference": macro_over(f1, masks) - macro_over(reference, masks),
            "ci": list(interval), "verdict": interval.verdict}


def gains_over_best_mix(outcomes: ArmOutcomes, target_tokens: float, f1: dict[str, np.ndarray]) -> dict | None:
    """The best mix at `target_tokens` (`best_mix`: arms, shares, tokens, f1) and, under `gains`, each
    policy's macro F1 minus the mix's with the paired bootstrap 95% interval and its verdict (`f1`:
    policy -> its per-query F1 on the arms' queries); None below the cheapest arm's tokens."""
    mix = best_mix(outcomes, target_tokens)
    if mix is None:
        return None
    reference = mix.per_query_f1(outcomes)
    masks = outcomes.masks
    names = list(f1)
    intervals = paired_bootstrap_cis(np.stack([f1[name] - reference for name in names]), outcomes.benchmarks) \
        if names else []
    gains = {name: {"difference": macro_over(f1[name], masks) - macro_over(reference, masks), "ci": list(interval),
                    "verdict": interval.verdict} for name, interval in zip(names, intervals)}
    return {**mix.to_dict(), "gains": gains}
