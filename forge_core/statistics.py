"""The statistics every protocol reports: macro averages over benchmarks, paired-query bootstrap
intervals (`Interval`: bounds, level and which side of zero they lie), normal intervals of a mean
(`mean_interval`, for the served traffic), action distributions, KL to a target distribution and the
Pareto frontier."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

N_BOOTSTRAP = 1000
LEVEL = 0.95  # of every bootstrap interval FORGE reports
Z_95 = 1.959964  # two-sided 95% normal quantile


class Interval(NamedTuple):
    """A confidence interval of a difference (a paired bootstrap's, at `level`) and its verdict:
    `above` zero when its lower bound is (the first side is decidably better), `below` when its
    upper bound is, neither when it holds zero (not decidably different). A (low, high) tuple, so
    reports store it as the JSON list [low, high]; `Interval.of` reads a stored one back."""

    low: float
    high: float

    @classmethod
    def of(cls, bounds: Sequence[float]) -> Interval:
        """The interval of stored (low, high) bounds."""
        low, high = bounds
        return cls(float(low), float(high))

    @property
    def level(self) -> float:
        """Its confidence level (every interval FORGE computes is at `LEVEL`)."""
        return LEVEL

    @property
    def above(self) -> bool:
        """Decidably above zero."""
        return self.low > 0

    @property
    def below(self) -> bool:
        """Decidably below zero."""
        return self.high < 0

    @property
    def decided(self) -> bool:
        """Decidably on one side of zero."""
        return self.above or self.below

    @property
    def verdict(self) -> str:
        """"above", "below" or "not decidably different"."""
        return "above" if self.above else "below" if self.below else "not decidably different"


def macro(values: np.ndarray, benchmarks: np.ndarray) -> float:
    """Mean over benchmarks of the per-benchmark means."""
    return macro_over(values, benchmark_masks(benchmarks))


def benchmark_masks(benchmarks: np.ndarray) -> list[np.ndarray]:
    """One row mask per benchmark, in `np.unique` order (for many `macro_over` calls on the same rows)."""
    return [benchmarks == b for b in np.unique(benchmarks)]


def macro_over(values: np.ndarray, masks: list[np.ndarray]) -> float:
    """`macro` with the benchmarks' row masks given (`benchmark_masks`)."""
    return float(np.mean([values[mask].mean() for mask in masks]))



def known_per_benchmark(values: np.ndarray, benchmarks: np.ndarray) -> dict[str, tuple[np.ndarray, int]]:
    """Per benchmark with at least one known value: its known (not NaN) values and its number of
    queries, in benchmark order."""
    known = {}
    for benchmark in np.unique(benchmarks):
        of_benchmark = values[benchmarks == benchmark]
        present = of_benchmark[~np.isnan(of_benchmark)]
        if len(present):
            known[str(benchmark)] = (present, len(of_benchmark))
    return known


@functools.lru_cache(maxsize=8)
def _resamples(seed: int, n_boot: int, sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The bootstrap's resampled query positions, per benchmark of these sizes (in `np.unique`
    order): the same draws for every interval with the same seed and sizes, so they are drawn once
    (drawing them took three quarters of an interval's time) and kept read-only. They are kept as
    numpy's own index type: an int32 index array is converted on every use (2-3x slower)."""
    rng = np.random.default_rng(seed)
    samples = []
    for size in sizes:
        drawn = rng.integers(0, size, size=(n_boot, size)).astype(np.intp)
        drawn.flags.writeable = False
        samples.append(drawn)
    return tuple(samples)


@functools.lru_cache(maxsize=8)
def _resample_weights(seed: int, n_boot: int, sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """`_resamples` as weights: row r holds how often resample r drew each query, divided by the
    benchmark's size, so resample r's mean of a column is one row of a matrix product."""
    weights = []
    for drawn in _resamples(seed, n_boot, sizes):
        size = drawn.shape[1]
        flat = (drawn + np.arange(n_boot)[:, None] * size).ravel()
        resampled = np.bincount(flat, minlength=n_boot * size).reshape(n_boot, size) / size
        resampled.flags.writeable = False
        weights.append(resampled)
    return tuple(weights)


def paired_bootstrap_ci(a: np.ndarray, b: np.ndarray, benchmarks: np.ndarray, n_boot: int = N_BOOTSTRAP,
                        seed: int = 0) -> Interval:
    """95% percentile interval of macro(a) - macro(b), resampling query pairs within each benchmark."""
    diff = a - b
    groups = [diff[benchmarks == benchmark] for benchmark in np.unique(benchmarks)]
    samples = _resamples(seed, n_boot, tuple(len(values) for values in groups))
    per_benchmark = [values[drawn].mean(axis=1) for values, drawn in zip(groups, samples)]
    macro_diffs = np.mean(per_benchmark, axis=0)
    low, high = np.percentile(macro_diffs, [2.5, 97.5])
    return Interval(float(low), float(high))


def paired_bootstrap_cis(differences: np.ndarray, benchmarks: np.ndarray, n_boot: int = N_BOOTSTRAP,
                         seed: int = 0) -> list[Interval]:
    """`paired_bootstrap_ci` of many paired differences on the same queries at once (one row of
    `differences` each, one column per query): the same resamples, one matrix product per
    benchmark, equal to the one-at-a-time intervals within rounding (the product sums in another
    order). Returns one interval per difference."""
    masks = benchmark_masks(benchmarks)
    weights = _resample_weights(seed, n_boot, tuple(int(mask.sum()) for mask in masks))
    per_benchmark = [differences[:, mask] @ resampled.T for mask, resampled in zip(masks, weights)]
    bounds = np.percentile(np.mean(per_benchmark, axis=0), [2.5, 97.5], axis=1).T
    return [Interval(float(low), float(high)) for low, high in bounds]


def mean_interval(values: list[float]) -> tuple[float, tuple[float, float]]:
    """Mean and normal 95% interval of `values` (NaN where undefined)."""
    n = len(values)
    if n == 0:
        return math.nan, (math.nan, math.nan)
    mean = sum(values) / n
    if n < 2:
        return mean, (math.nan, math.nan)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = Z_95 * math.sqrt(variance / n)
    return mean, (mean - half, mean + half)


def action_distribution(actions: np.ndarray, n_arms: int) -> np.ndarray:
    """Share of rows answered by each arm."""
    return np.bincount(actions, minlength=n_arms) / max(len(actions), 1)



def kl_divergence(p: np.ndarray, q: np.ndarray, floor: float = 1e-6) -> float:
    """KL(p || q) with q floored (a policy may never pick an arm the target weights)."""
    q = np.maximum(q, floor)
    q = q / q.sum()
    mask = p > 0
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))



def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (cost, quality) points no other point beats on both (lower cost, higher
    quality), sorted by cost."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    frontier, best_quality = [], -np.inf
    for i in order:
        if points[i][1] > best_quality:
            frontier.append(i)
            best_quality = points[i][1]
    return frontier

