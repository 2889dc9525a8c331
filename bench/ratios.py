"""Speed as ratios: a time divided by a reference measured in the same run on the same machine (so
any machine can check it), and whether the ratios meet a goal."""

from __future__ import annotations

from collections.abc import Mapping


def ratio(seconds: float, reference: float) -> float:
    """`seconds` as a multiple of `reference` (rounded to 2 decimals); refuses a reference of zero or less."""
    if reference <= 0:
        raise ValueError(f"a ratio needs a positive reference, got {reference}")
    return round(seconds / reference, 2)


def goal(ratios: Mapping[str, float], at_most: float) -> dict:
    """The goal "every ratio at most `at_most`" and whether these ratios meet it: the ratios over it
    are listed by name (none: met)."""
    misses = {name: value for name, value in ratios.items() if value > at_most}
    return {"at_most": at_most, "met": not misses, "misses": misses}
