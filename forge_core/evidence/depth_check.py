"""The depth check (`forge host check`): does a host do what each thinking depth asks?

Each depth of the host's alphabet (no_think and cot; think_low and think_high on hosts with a
reasoning budget) is sent on N short questions as the Direct arm, the way every answer is asked
(after one untimed warm-up call, so that a fresh server's first calls do not count as latency),
except that a thinking depth's output cap gets one more budget of headroom: an engine that ignores
the budget then shows it, rather than being cut at the cap. Per depth the check reports the
reasoning tokens (min/median/max) against the depth's budget, the latency, and a verdict:

- `honoured`: an off depth (no_think, cot) produced no reasoning; a thinking depth reasoned and
  stayed within its budget x `OVER_BUDGET_FACTOR`.
- `cannot turn off`: an off depth produced reasoning (e.g. a Qwen3 template that thinks when the
  off field is missing or ignored).
- `over budget`: a thinking depth exceeded its budget x `OVER_BUDGET_FACTOR` on some question.
- `refused`: the host answered the depth's request with an error (e.g. a model that takes no
  thinking budget: HTTP 400), named in the note.
- `ignored`: a thinking depth produced no reasoning at all, or think_low and think_high were
  indistinguishable (every question's reasoning within `SAME_FRACTION` of each other) while one
  of them broke its budget: the budget field had no effect. Equal counts within both budgets say
  nothing (the budgets did not bind on these questions) and stay `honoured`.

On a chat-completions host without budget forcing, the thinking depths found `ignored` or
`over budget` are sent again with budget forcing (`forge_core.hosts.budget_forcing`), and each
row says what forcing would make of it (`with_budget_forcing`; None where not tried).

The report is stored with the host configuration (keyed by its configuration hash, so an edited
configuration needs a new check); a 12-arm enumeration refuses a host whose check is missing or
did not find every depth honoured (`refuse_unchecked_depths`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from forge_core.arms import THINKING_BUDGETS, Arm, thinking_modes
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.answering import ArmAnswer, Evidence, arm_answer, arm_request
from forge_core.evidence.host_check import CHECK_QUESTION, DIRECT_ARM
from forge_core.hosts.base import Host, HostConfig, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.store import Store

CHECK_QUESTIONS: tuple[str, ...] = (
    CHECK_QUESTION,
    "Which planet is known as the Red Planet?",
    "How many legs does a spider have?",
    "Who wrote the play Hamlet?",
    "What is 17 multiplied by 23?",
    "Which element has the chemical symbol O?",
)
DEFAULT_QUESTIONS = 3
OVER_BUDGET_FACTOR = 1.1  # reasoning above budget x this is over budget
SAME_FRACTION = 0.1  # think_low and think_high within this fraction of each other are indistinguishable
HONOURED, CANNOT_TURN_OFF, OVER_BUDGET, IGNORED = "honoured", "cannot turn off", "over budget", "ignored"
REFUSED = "refused"


@dataclass(frozen=True)
class DepthResult:
    """One depth's calls and verdict."""

    depth: str  # no_think, cot, think_low or think_high
    budget: int | None  # reasoning budget in tokens; None at an off depth
    reasoning_tokens: tuple[int, ...]  # per question
    latency_ms: tuple[float, ...]  # per question
    reasoning_methods: tuple[str, ...]  # how the counts were obtained (usage, estimated, none)
    error: str = ""  # the first failed call's reason; the depth is then refused
    verdict: str = ""
    note: str = ""

    def summary(self) -> dict[str, Any]:
        """Reasoning min/median/max and median latency, with the verdict (the JSON report's row;
        None where no call of the depth was answered)."""
        tokens, latency = self.reasoning_tokens, self.latency_ms
        return {"depth": self.depth, "budget": self.budget, "reasoning_min": min(tokens, default=None),
                "reasoning_median": statistics.median(tokens) if tokens else None,
                "reasoning_max": max(tokens, default=None),
                "reasoning_tokens": list(tokens), "reasoning_methods": sorted(set(self.reasoning_methods)),
                "latency_median_ms": round(statistics.median(latency), 1) if latency else None,
                "latency_ms": [round(latency, 1) for latency in self.latency_ms],
                "verdict": self.verdict, "note": self.note}


@dataclass(frozen=True)
class HostCheckRequest:
    """Check one host's depths on `questions` short questions."""

    host: str
    questions: int = DEFAULT_QUESTIONS

    def check(self, store: Store) -> HostConfig:
        """The host's configuration; refuses an unknown host or a question count out of range."""
        if not 1 <= self.questions <= len(CHECK_QUESTIONS):
            raise InvalidInput(f"--questions is between 1 and {len(CHECK_QUESTIONS)}, not {self.questions}")
        return get_host_config(store, self.host)


def run_host_check(store: Store, request: HostCheckRequest,
                   on_progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Send every depth of the host's alphabet on the questions, classify, store and return the
    report (`on_progress(calls done, calls in all)` after each call)."""
    config = request.check(store)
    depths = thinking_modes(config.alphabet_size)
    questions = CHECK_QUESTIONS[: request.questions]
    answers = asyncio.run(_ask_every_depth(config, depths, questions, on_progress))
    results = classify([_result(depth, answers[depth]) for depth in depths])
    forced = _forced_verdicts(config, results, questions, on_progress)
    report = {"host": config.name, "host_config_hash": config_hash(config), "thinking": config.thinking,
              "budget_forcing": config.budget_forcing, "questions": len(questions),
              "depths": [{**result.summary(), "with_budget_forcing": forced.get(result.depth)} for result in results]}
    store.save_host_check(config.name, report["host_config_hash"], report)
    return report


def _forced_verdicts(config: HostConfig, results: list[DepthResult], questions: tuple[str, ...],
                     on_progress: Callable[[int, int], None] | None) -> dict[str, str]:
    """depth -> verdict under budget forcing, for the failed thinking depths of a chat-completions
    host that does not force budgets yet."""
    failed = tuple(r.depth for r in results if r.budget is not None and r.verdict in (IGNORED, OVER_BUDGET))
    if not failed or config.budget_forcing or config.kind != "openai":
        return {}
    forcing = dataclasses.replace(config, budget_forcing=True)
    answers = asyncio.run(_ask_every_depth(forcing, failed, questions, on_progress))
    again = {depth: _result(depth, answers[depth]) for depth in failed}
    rerun = classify([again.get(result.depth, result) for result in results])
    return {result.depth: result.verdict for result in rerun if result.depth in failed}


async def _ask_every_depth(config: HostConfig, depths: tuple[str, ...], questions: tuple[str, ...],
                           on_progress: Callable[[int, int], None] | None) -> dict[str, list[ArmAnswer | HostError]]:
    answers: dict[str, list[ArmAnswer | HostError]] = {depth: [] for depth in depths}
    total = len(depths) * len(questions)
    async with hosted(config) as host:
        # One untimed call first (the host check's question and arm): a fresh server pages its weights in.
        await host.generate(arm_request(Evidence(CHECK_QUESTION, ()), DIRECT_ARM, False))
        for depth in depths:
            for question in questions:
                answers[depth].append(await _ask(host, question, Arm("direct", depth)))
                if on_progress:
                    on_progress(sum(map(len, answers.values())), total)
    return answers


async def _ask(host: Host, question: str, arm: Arm) -> ArmAnswer | HostError:
    """The Direct request of `arm`, with one more budget of output headroom at a thinking depth;
    a call that fails for good is returned as its error (the depth is refused)."""
    request = arm_request(Evidence(question, ()), arm, False)
    if arm.thinking_budget is not None:
        request = dataclasses.replace(request, max_tokens=request.max_tokens + arm.thinking_budget)
    try:
        return arm_answer(arm, await host.generate(request), "", False)
    except HostError as error:
        return error


def _result(depth: str, outcomes: list[ArmAnswer | HostError]) -> DepthResult:
    answers = [a for a in outcomes if isinstance(a, ArmAnswer)]
    errors = [str(e) for e in outcomes if isinstance(e, HostError)]
    return DepthResult(depth, THINKING_BUDGETS.get(depth), tuple(a.tokens_reasoning for a in answers),
                       tuple(a.latency_ms for a in answers), tuple(a.reasoning_method for a in answers),
                       error=errors[0] if errors else "")


def classify(results: list[DepthResult]) -> list[DepthResult]:
    """The results with their verdicts (see the module docstring for the rules)."""
    by_depth = {result.depth: result for result in results}
    low, high = by_depth.get("think_low"), by_depth.get("think_high")
    budget_ignored = (low is not None and high is not None and not (low.error or high.error)
                      and _indistinguishable(low, high) and (_over_budget(low) or _over_budget(high)))
    return [_with_verdict(result, budget_ignored) for result in results]


def _with_verdict(result: DepthResult, budget_ignored: bool) -> DepthResult:
    tokens = result.reasoning_tokens
    if result.error:
        return _verdict(result, REFUSED, result.error)
    if result.budget is None:
        if any(tokens):
            return _verdict(result, CANNOT_TURN_OFF, f"reasoned on {sum(map(bool, tokens))} of {len(tokens)} questions")
        return _verdict(result, HONOURED)
    if not any(tokens):
        return _verdict(result, IGNORED, "no reasoning at a thinking depth")
    if budget_ignored:
        return _verdict(result, IGNORED, "think_low and think_high reasoned alike, beyond a budget")
    if _over_budget(result):
        return _verdict(result, OVER_BUDGET, f"{max(tokens)} reasoning tokens against a budget of {result.budget}")
    return _verdict(result, HONOURED)


def _verdict(result: DepthResult, verdict: str, note: str = "") -> DepthResult:
    return dataclasses.replace(result, verdict=verdict, note=note)


def _over_budget(result: DepthResult) -> bool:
    return max(result.reasoning_tokens) > (result.budget or 0) * OVER_BUDGET_FACTOR


def _indistinguishable(low: DepthResult, high: DepthResult) -> bool:
    return all(abs(a - b) <= SAME_FRACTION * max(a, b, 1) for a, b in zip(low.reasoning_tokens, high.reasoning_tokens))


def failed_depths(report: dict[str, Any]) -> dict[str, str]:
    """depth -> verdict of every depth a stored report did not find honoured."""
    return {row["depth"]: row["verdict"] for row in report["depths"] if row["verdict"] != HONOURED}


def refuse_unchecked_depths(store: Store, config: HostConfig, depths: tuple[str, ...]) -> None:
    """Refuse a host whose stored depth check is missing, or failed for one of `depths`."""
    stored = store.host_check(config.name, config_hash(config))
    override = "or pass --allow-unchecked-depths"
    if stored is None:
        raise MissingStep(f"host '{config.name}' has no depth check for this configuration: run "
                          f"`forge host check {config.name}` ({override})")
    checked_at, report = stored
    checked = {row["depth"] for row in report["depths"]}
    failed = {depth: verdict for depth, verdict in failed_depths(report).items() if depth in depths}
    failed |= {depth: "not checked" for depth in depths if depth not in checked}
    if failed:
        found = ", ".join(f"{depth} {verdict}" for depth, verdict in failed.items())
        raise InvalidInput(f"host '{config.name}': its depth check (`forge host check {config.name}`, "
                           f"{checked_at:%Y-%m-%d %H:%M}) found {found}; fix the depth map ({override})")
