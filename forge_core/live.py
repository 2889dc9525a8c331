"""One question, live: answer it under an arm on a host, and say what Always-Raw costs for it.

The Always-Raw comparison takes the token counts of the `raw:no_think` arm for the same question
on the same host, always the host's own usage numbers: the answer itself when the arm is
`raw:no_think`; the stored outcome when the question comes from the store and its Raw outcome on
this host was enumerated (no extra call); otherwise one extra `raw:no_think` call.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

from forge_core.answering import ArmAnswer, Evidence, answer_with_arm, retrieve_evidence, score_arm_answer
from forge_core.arms import Arm
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer, running_server
from forge_core.hosts.registry import make_host
from forge_core.records import Example, is_fever_benchmark
from forge_core.retrieval import Retriever
from forge_core.store import Store

RAW_ARM = Arm("raw", "no_think")
CHECK_QUESTION = "What is the capital of France?"
_serving_lock = threading.Lock()


@dataclass(frozen=True)
class RawCost:
    """Tokens of the Always-Raw arm for a question, and where the numbers come from."""

    tokens_in: int
    tokens_out: int
    source: str  # "this answer", "stored outcome" or "extra call"

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True)
class LiveAnswer:
    """A live answer with its evidence, its score when the question has gold answers, and the
    Always-Raw cost of the same question."""

    answer: ArmAnswer
    evidence: Evidence
    raw: RawCost
    f1: float | None  # None for a typed question (no gold answers)
    golds: tuple[str, ...]

    @property
    def tokens(self) -> int:
        """Input plus output tokens of the answer."""
        return self.answer.tokens_in + self.answer.tokens_out

    @property
    def tokens_vs_raw(self) -> int:
        """Tokens of the answer minus those of Always-Raw (negative: this arm was cheaper)."""
        return self.tokens - self.raw.tokens


def serve_for_session(config: HostConfig) -> HostConfig:
    """The configuration with a live base URL. Embedded hosts reuse a running server or start
    one that lives until this process exits; remote hosts pass through unchanged."""
    if config.kind != "embedded":
        return config
    with _serving_lock:
        running = running_server(config.model)
        if running is None:
            server = EmbeddedServer(config.model)
            server.start()
            atexit.register(server.stop)
            running = server.info
    return dataclasses.replace(config, base_url=running.base_url)


def is_serving(config: HostConfig) -> bool:
    """False when a served embedded host's server has gone (the URL must be refreshed)."""
    return config.kind != "embedded" or running_server(config.model) is not None


def ask_live(store: Store, config: HostConfig, retriever: Retriever, question: str, benchmark: str,
             arm: Arm, example: Example | None = None) -> LiveAnswer:
    """Answer `question` under `arm` on a served host, with evidence from `retriever`; `example`
    is the stored example the question comes from, if any (for its score and stored Raw cost)."""
    if arm.thinking_budget and not config.supports_thinking:
        raise ValueError(f"host '{config.name}' has no reasoning budget; {arm.name} needs a thinking host")
    is_fever = is_fever_benchmark(benchmark)
    evidence = retrieve_evidence(retriever, question)
    stored_raw = _stored_raw_cost(store, config.name, example) if example and arm != RAW_ARM else None
    arms = [arm] if arm == RAW_ARM or stored_raw else [arm, RAW_ARM]
    answers = asyncio.run(_answer_all(config, evidence, arms, is_fever))
    if arm == RAW_ARM:
        raw = RawCost(answers[0].tokens_in, answers[0].tokens_out, "this answer")
    else:
        raw = stored_raw or RawCost(answers[1].tokens_in, answers[1].tokens_out, "extra call")
    f1 = score_arm_answer(answers[0], example.answers, is_fever)[0] if example else None
    return LiveAnswer(answers[0], evidence, raw, f1, example.answers if example else ())


def route_live(store: Store, checkpoint_id: str, question: str, benchmark: str,
               config: HostConfig | None = None) -> Any:
    """A trained router's `RoutingDecision` for a question (`forge_core.routing`); a Full router
    runs its four probes on the served host `config`."""
    from forge_core.routing import route_question  # torch and the router load only when routing

    async def route() -> Any:
        host = make_host(config) if config else None
        try:
            return await route_question(store, checkpoint_id, question, benchmark, host)
        finally:
            if host:
                await host.aclose()

    return asyncio.run(route())


def check_host(config: HostConfig) -> ArmAnswer:
    """A short real call to a served host: a one-line question on the Direct arm."""
    return asyncio.run(_answer_all(config, Evidence(CHECK_QUESTION, ()), [Arm("direct", "no_think")], False))[0]


async def _answer_all(config: HostConfig, evidence: Evidence, arms: list[Arm], is_fever: bool) -> list[ArmAnswer]:
    host = make_host(config)
    try:
        return [await answer_with_arm(host, evidence, arm, is_fever) for arm in arms]
    finally:
        await host.aclose()


def _stored_raw_cost(store: Store, host: str, example: Example) -> RawCost | None:
    outcomes = store.arm_outcomes(host, example.benchmark)
    if outcomes.empty:
        return None
    match = outcomes[(outcomes["example_id"] == example.example_id) & (outcomes["arm"] == RAW_ARM.name)
                     & outcomes["error"].isna()]
    if match.empty:
        return None
    row = match.iloc[0]
    return RawCost(int(row["tokens_in"]), int(row["tokens_out"]), "stored outcome")
