"""What a judge-host rating run asks and stores: the `judge` reward (is the answer correct?) or the
`support` verdict (does the evidence the prompt held support it?). Both run as the same resumable
job (`forge_core.rewards.judge_job`) and land in `reward_outcomes` under their own source and key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from forge_core.errors import InvalidInput
from forge_core.hosts.base import GenerationRequest
from forge_core.rewards import judge, support_verdict


@dataclass(frozen=True)
class RatingKind:
    """One kind of rating: its prompt, how a reply becomes a stored value, and its identity."""

    source: str  # the `source` column of its rows
    prompt_hash: str  # of its system message and templates
    build_request: Callable[[str, str, str, bool], GenerationRequest]  # (question, answer, evidence, is_fever)
    parse: Callable[[str], float | None]  # the reply's value; None when the reply has none
    empty_answer: tuple[float, str]  # value and verdict stored for an empty answer, without a call
    unparsed_value: float  # stored for a reply without a value (counted as unrated)
    direct_evidence: bool  # Direct arms rated against the retrieved passages (else against none)

    def reward_key(self, judge_config_hash: str, retriever_hash: str = "") -> str:
        """The identity of this kind's rows by one judge host configuration, of the answers made
        under one retriever configuration ("": the default BM25)."""
        return judge.rating_key(self.source, judge_config_hash, self.prompt_hash, retriever_hash)


JUDGE_KIND = RatingKind(judge.JUDGE_SOURCE, judge.judge_prompt_hash(), judge.judge_request, judge.parse_rating,
                        empty_answer=(0.0, "(empty answer)"), unparsed_value=0.0, direct_evidence=False)
SUPPORT_KIND = RatingKind(
    support_verdict.SUPPORT_SOURCE, support_verdict.support_prompt_hash(), support_verdict.support_request,
    support_verdict.parse_support_score,
    empty_answer=(support_verdict.SUPPORT_SCORES[support_verdict.NOT_ENOUGH_INFO], "(empty answer)"),
    unparsed_value=support_verdict.SUPPORT_SCORES[support_verdict.NOT_ENOUGH_INFO], direct_evidence=True)
RATING_KINDS: dict[str, RatingKind] = {kind.source: kind for kind in (JUDGE_KIND, SUPPORT_KIND)}


def rating_kind(name: str) -> RatingKind:
    """The rating kind called `name` ("judge" or "support"), else `InvalidInput`."""
    if name not in RATING_KINDS:
        raise InvalidInput(f"unknown rating kind '{name}' (known: {', '.join(RATING_KINDS)})")
    return RATING_KINDS[name]
