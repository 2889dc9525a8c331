"""The paired bootstrap: its resampled positions are drawn once per (seed, sizes) and reused, the
interval is exactly what drawing them afresh for each call gives, and many intervals at once are
each one's own (within rounding: a matrix product sums in another order)."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.statistics import Interval, paired_bootstrap_ci, paired_bootstrap_cis


def drawn_afresh(a: np.ndarray, b: np.ndarray, benchmarks: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """The interval with its own generator, positions drawn per benchmark in `np.unique` order."""
    rng = np.random.default_rng(seed)
    diff = a - b
    per_benchmark = []
    for benchmark in np.unique(benchmarks):
        values = diff[benchmarks == benchmark]
        per_benchmark.append(values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1))
    low, high = np.percentile(np.mean(per_benchmark, axis=0), [2.5, 97.5])
    return float(low), float(high)


def test_reused_draws_give_the_interval_of_fresh_draws_to_the_last_bit() -> None:
    rng = np.random.default_rng(3)
    benchmarks = np.repeat(np.array(["fever", "hotpotqa", "popqa"]), [40, 25, 31])
    for seed in (0, 1):
        for _ in range(3):  # the second and third calls reuse the first one's draws
            a, b = rng.random(len(benchmarks)), rng.random(len(benchmarks))
            assert paired_bootstrap_ci(a, b, benchmarks, n_boot=500, seed=seed) == drawn_afresh(
                a, b, benchmarks, 500, seed)
    # another seed draws other positions: another interval
    a, b = rng.random(len(benchmarks)), rng.random(len(benchmarks))
    assert paired_bootstrap_ci(a, b, benchmarks, n_boot=500, seed=0) != paired_bootstrap_ci(
        a, b, benchmarks, n_boot=500, seed=1)


def test_many_intervals_at_once_are_each_ones_own() -> None:
    rng = np.random.default_rng(5)
    benchmarks = np.repeat(np.array(["fever", "musique"]), [30, 17])
    a, b = rng.random((4, len(benchmarks))), rng.random((4, len(benchmarks)))
    together = paired_bootstrap_cis(a - b, benchmarks, n_boot=300, seed=2)
    assert len(together) == 4
    for row in range(4):
        assert tuple(together[row]) == pytest.approx(drawn_afresh(a[row], b[row], benchmarks, 300, 2), abs=1e-12)
    assert len({tuple(interval) for interval in together}) == 4  # four differences, four intervals


@pytest.mark.parametrize("bounds, verdict", [((0.01, 0.2), "above"), ((-0.2, -0.01), "below"),
                                             ((-0.1, 0.1), "not decidably different"),
                                             ((0.0, 0.1), "not decidably different"),
                                             ((-0.1, 0.0), "not decidably different")])
def test_an_interval_knows_its_side_of_zero(bounds: tuple[float, float], verdict: str) -> None:
    interval = Interval.of(bounds)
    assert interval.verdict == verdict
    assert (interval.above, interval.below) == (verdict == "above", verdict == "below")
    assert interval.decided == (verdict != "not decidably different")
    assert list(interval) == list(bounds) and interval.level == 0.95
