"""The deploy rule's choices, written once: which fixed arm is the best, which policy beats it,
which leads and which of those tied with the leader is deployed.

Every view that names a best fixed arm or a policy to deploy reads these functions:
`decide.decide_from_outcomes` (`forge decide`, the Pareto page, `forge eval crossfit`'s decision),
the crossfit report's `best_fixed_policy` (`crossfit.crossfit_report`) and its `decidable` column
(`forge_core.reports.decision.decidable_policies`). Ties are broken the same everywhere and never by
the order in which policies happen to be listed: higher macro utility first, then fewer tokens a
query, then the name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND
from forge_core.statistics import Interval


def rank_key(name: str, utility: Mapping[str, float], tokens: Mapping[str, float]) -> tuple[float, float, str]:
    """The rule's order of policies (smallest first): higher macro utility, then fewer tokens, then name."""
    return -utility[name], tokens[name], name


def best_fixed(fixed: Iterable[str], utility: Mapping[str, float], tokens: Mapping[str, float]) -> str:
    """The best fixed arm: the fixed arm of highest macro utility (an exact tie: fewer tokens, then name)."""
    return min(fixed, key=lambda name: rank_key(name, utility, tokens))


def beats_best_fixed(kind: str, gain_ci: Sequence[float]) -> bool:
    """Whether a policy beats the best fixed arm decidably: neither a fixed arm nor the oracle, and
    the paired 95% interval of its utility gain over that arm above zero (the dev fallback rule)."""
    return kind not in (FIXED_ARM_KIND, ORACLE_KIND) and Interval.of(gain_ci).above


def leader(candidates: Iterable[str], utility: Mapping[str, float], tokens: Mapping[str, float]) -> str:
    """The candidate of highest macro utility (an exact tie: fewer tokens, then name)."""
    return min(candidates, key=lambda name: rank_key(name, utility, tokens))


def deployed_among(tied: Iterable[str], leading: str, tokens: Mapping[str, float]) -> str:
    """Among the candidates not decidably different from the leader (the leader among them): the one
    of fewest tokens a query, the leader on an exact tie, then by name."""
    return min(tied, key=lambda name: (tokens[name], name != leading, name))
