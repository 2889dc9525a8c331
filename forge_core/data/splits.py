"""Seeded, disjoint train/dev/test splits per benchmark.

Sizes follow the paper (1,500 train / 500 dev / 300 test). A benchmark with fewer records than
their sum (2,300) gets sizes proportional to them, with dev and test each at least
min(50, n // 5) so small benchmarks keep a usable test set; train takes the rest. Records beyond
2,300 stay unassigned. Three split seeds (0, 1, 2) give the paper's 3 splits x 3 seeds protocol.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from forge_core.records import SplitAssignment

PAPER_SIZES = {"train": 1500, "dev": 500, "test": 300}
SPLIT_SEEDS: tuple[int, ...] = (0, 1, 2)
SPLIT_NAMES: tuple[str, ...] = ("train", "dev", "test")


def split_sizes(n_records: int) -> dict[str, int]:
    """Train/dev/test sizes for a benchmark with `n_records` records."""
    total = sum(PAPER_SIZES.values())
    if n_records >= total:
        return dict(PAPER_SIZES)
    floor = min(50, n_records // 5)
    dev = max(round(n_records * PAPER_SIZES["dev"] / total), floor)
    test = max(round(n_records * PAPER_SIZES["test"] / total), floor)
    return {"train": n_records - dev - test, "dev": dev, "test": test}


def assign_splits(
    benchmark: str, example_ids: Sequence[str], split_seed: int, source_sha256: str
) -> SplitAssignment:
    """Shuffle the ids (sorted first, so file order does not matter) and cut test, dev, train."""
    ordered = sorted(example_ids)
    rng = np.random.default_rng([split_seed, zlib.crc32(benchmark.encode("utf-8"))])
    shuffled = [ordered[i] for i in rng.permutation(len(ordered))]
    sizes = split_sizes(len(ordered))
    splits: dict[str, str] = {}
    start = 0
    for name in ("test", "dev", "train"):
        for example_id in shuffled[start : start + sizes[name]]:
            splits[example_id] = name
        start += sizes[name]
    return SplitAssignment(benchmark, split_seed, source_sha256, splits)
