"""A test double for judge hosts: an in-process host that rates an answer by a fixed rule,
so judge jobs run without a model."""

from __future__ import annotations

import re

from forge_core.hosts.base import Generation, GenerationRequest, Host, HostConfig, HostError
from forge_core.records import RewardOutcome
from forge_core.rewards.judge import JUDGE_SYSTEM, rating_key
from forge_core.store import Store, utc_now

DOUBLE_CONFIG = HostConfig(name="rating-double", kind="openai", model="rating-double", base_url="http://127.0.0.1:9/v1")


class RatingHost(Host):
    """Rates an answer by its length in characters modulo 11 (different answers, different ratings),
    or replies `reply` when given; fails with a `HostError` on answers containing `fail_on`. Keeps
    every request it received."""

    def __init__(self, config: HostConfig = DOUBLE_CONFIG, fail_on: str | None = None,
                 reply: str | None = None) -> None:
        self.config, self.fail_on, self.reply = config, fail_on, reply
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        answer = re.search(r"(?:Answer|Verdict) given: (.*)\n", request.messages[1]["content"]).group(1)
        if self.fail_on is not None and self.fail_on in answer:
            raise HostError("scripted failure", attempts=1)
        text = self.reply if self.reply is not None else str(len(answer) % 11)
        return Generation(text=text, tokens_in=50, tokens_out=1, latency_ms=1.0)

    async def aclose(self) -> None:
        return None


SUPPORT_LABELS = ("SUPPORTED", "CONTRADICTED", "NOT ENOUGH INFO")


class VerdictHost(RatingHost):
    """A support evaluator double: labels an answer by the length in characters of its whole prompt
    (evidence included) modulo 3 (SUPPORTED, CONTRADICTED, NOT ENOUGH INFO), or replies `reply`
    when given; a judge's correctness request (`forge rewards judge`'s prompt) it rates as `RatingHost`."""

    async def generate(self, request: GenerationRequest) -> Generation:
        if request.messages[0]["content"] == JUDGE_SYSTEM and self.reply is None:
            return await super().generate(request)
        self.requests.append(request)
        text = self.reply if self.reply is not None else SUPPORT_LABELS[len(request.messages[1]["content"]) % 3]
        return Generation(text=text, tokens_in=80, tokens_out=2, latency_ms=1.0)


def write_support_verdicts(store: Store, host: str, by_arm: dict[str, float], split: str = "test") -> None:
    """A support verdict of value `by_arm[arm]` (1 SUPPORTED, 0.5 NOT ENOUGH INFO, 0 CONTRADICTED)
    for each stored outcome of those arms on the split's queries (seed 0), by the evaluator
    "judge:double@cfg1"."""
    splits = store.split_table(0)
    chosen = set(map(tuple, splits[splits["split"] == split][["benchmark", "example_id"]].values))
    key = rating_key("support", "cfg1", "prompt")
    store.write_reward_outcome(*(RewardOutcome(
        host, row.benchmark, row.example_id, row.arm, key, "support", "double", "cfg1", "prompt", by_arm[row.arm], "",
        0, 0, 0.0, None, utc_now()) for row in store.arm_outcomes(host).itertuples()
        if row.arm in by_arm and (row.benchmark, row.example_id) in chosen))
