"""A test double of an answering host for deployment tests: a local HTTP server speaking the OpenAI
chat-completions protocol (`AnsweringServer`) whose usage is realistic per arm (prompt tokens from
the prompt's characters, as a tokenizer counts about four to a token; a step-by-step answer is long,
a direct one short), and which counts the calls and tokens it served; and the replay's questions
(`replay_questions`: demo questions whose mix of benchmarks shifts half-way), shared by the deploy
tests and scripts/deploy_replay.py."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from forge_core.store import Store

from support.answering_server import AnsweringServer

SHORT_ANSWER_TOKENS = 6  # a no_think answer's completion tokens
STEP_BY_STEP_TOKENS = 90  # a CoT answer's
STEP_BY_STEP = "Let us think step by step"  # the CoT arms' instruction (forge_core.evidence.prompts.COT_SUFFIX)
LONG_BENCHMARKS = ("musique", "2wikimultihopqa")  # the replay's mix before the shift
SHIFTED_MIX = {"musique": 0.35, "2wikimultihopqa": 0.35, "popqa": 0.3}  # after it


class CountingHost(AnsweringServer):
    """Answers every request like `AnsweringServer`, with per-arm usage; `tokens()` sums what it served."""

    @staticmethod
    def usage(body: dict[str, Any]) -> dict[str, int]:
        """Prompt tokens from the messages' characters; completion tokens by the kind of answer."""
        prompt = json.dumps(body["messages"])
        prompt_tokens = len(prompt) // 4
        completion = STEP_BY_STEP_TOKENS if STEP_BY_STEP in prompt else SHORT_ANSWER_TOKENS
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion}

    def tokens(self) -> int:
        """Tokens (in + out) of every request received so far."""
        with self.lock:
            bodies = [body for _, body in self.received]
        return sum(self.usage(body)["total_tokens"] for body in bodies)


def replay_questions(store: Store, n: int, seed: int = 0) -> list[str]:
    """`n` demo questions: the first half from the long-question benchmarks, the second half from
    `SHIFTED_MIX` (the mix of benchmarks shifts half-way)."""
    rng = np.random.default_rng(seed)
    pools = {b: [e.question for e in store.examples(b)] for b in SHIFTED_MIX}
    first = [pools[str(rng.choice(LONG_BENCHMARKS))] for _ in range(n // 2)]
    names, shares = list(SHIFTED_MIX), list(SHIFTED_MIX.values())
    second = [pools[str(rng.choice(names, p=shares))] for _ in range(n - n // 2)]
    return [str(rng.choice(pool)) for pool in first + second]
