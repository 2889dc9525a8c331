"""The prompt of every arm, for QA and for FEVER claim verification.

Layout: one fixed system message, then a user message of evidence (if any), the question, and
last the arm's answering instruction. Arms with the same support therefore share everything up
to that instruction, which lets a host's prompt cache reuse the evidence when they run back to
back.

A chat client of `forge serve` adds to this layout (`ClientChat`): its system text goes after
FORGE's, in the same first system message, separated by a blank line; its earlier turns go
between that system message and the arm's user message, unchanged; its generation settings
replace the arm's, the answer cap lowered but never raised. Without a client the request is
exactly the arm's.

Answer caps: 64 tokens for plain arms (the paper's cap). CoT arms may write their reasoning
before the final line: we cap them at 256 tokens, which fits the short step-by-step reasoning
a small host writes for multi-hop questions while bounding the cost on a CPU host. Every
generated token counts as output cost; the scored answer of a CoT arm is the text after its last
"Answer:" marker (see `forge_core.evidence.answers`). Think-Low / Think-High arms ask the host for a
reasoning budget of 1,024 / 4,096 tokens and keep the 64-token cap for the visible answer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from forge_core.arms import Arm
from forge_core.hosts.base import GenerationRequest
from forge_core.records import SAMPLE_PROBES

ANSWER_MAX_TOKENS = 64  # cap on a plain arm's answer
COT_MAX_TOKENS = 256  # cap on a CoT arm's reasoning plus final answer
SAMPLE_TEMPERATURE = 0.7  # self-consistency probe samples
SAMPLE_TOP_P = 0.9
SAMPLE_MAX_TOKENS = 24

SYSTEM_PROMPT = "You are a careful assistant that answers questions accurately and concisely."

QA_INSTRUCTION = "Answer the question with a short answer (a few words), without explanation."
FEVER_INSTRUCTION = (
    "Decide whether the claim is supported by facts, refuted by facts, or whether there is not "
    "enough information. Reply with exactly one label: SUPPORTS, REFUTES or NOT ENOUGH INFO."
)
COT_SUFFIX = (
    "Let us think step by step. Write your reasoning briefly, then give the final answer on the "
    "last line in the form \"Answer: <{what}>\"."
)


def user_message(question: str, support_text: str, thinking: str, is_fever: bool) -> str:
    """The user turn of an arm: evidence block, question (or claim), then the instruction."""
    parts = []
    if support_text:
        parts.append(f"Evidence:\n{support_text}")
    parts.append(f"Claim: {question}" if is_fever else f"Question: {question}")
    instruction = FEVER_INSTRUCTION if is_fever else QA_INSTRUCTION
    if thinking == "cot":
        what = "SUPPORTS, REFUTES or NOT ENOUGH INFO" if is_fever else "short answer"
        instruction = f"{instruction} {COT_SUFFIX.format(what=what)}"
    parts.append(instruction)
    return "\n\n".join(parts)


@dataclass(frozen=True)
class ClientChat:
    """What a chat client brings to an arm's prompt (`forge serve`): its system text, the turns
    before its question, and its generation settings (None: the arm's own)."""

    system: str = ""  # appended to FORGE's system message after a blank line
    history: tuple[dict[str, str], ...] = ()  # the turns before the question, in order
    max_tokens: int | None = None  # lowers the arm's answer cap, never raises it
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None

    def apply(self, request: GenerationRequest) -> GenerationRequest:
        """The arm's request with this client's system text, history and settings."""
        system, question = request.messages
        if self.system:
            system = {"role": "system", "content": f"{system['content']}\n\n{self.system}"}
        cap = request.max_tokens if self.max_tokens is None else min(self.max_tokens, request.max_tokens)
        return dataclasses.replace(
            request, messages=(system, *self.history, question), max_tokens=cap,
            temperature=request.temperature if self.temperature is None else self.temperature,
            top_p=request.top_p if self.top_p is None else self.top_p,
            seed=request.seed if self.seed is None else self.seed, stop=self.stop)


def build_request(question: str, support_text: str, arm: Arm, is_fever: bool) -> GenerationRequest:
    """The greedy host request for one arm on one query."""
    messages = (
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_message(question, support_text, arm.thinking, is_fever)},
    )
    max_tokens = COT_MAX_TOKENS if arm.thinking == "cot" else ANSWER_MAX_TOKENS
    return GenerationRequest(messages=messages, max_tokens=max_tokens, temperature=0.0,
                             thinking_budget=arm.thinking_budget)


def greedy_probe_request(question: str, is_fever: bool) -> GenerationRequest:
    """The greedy probe: the direct:no_think request itself."""
    return build_request(question, "", Arm("direct", "no_think"), is_fever)


def sample_probe_request(question: str, probe: str, is_fever: bool) -> GenerationRequest:
    """A self-consistency probe: the Direct prompt sampled at temperature 0.7, top-p 0.9, 24 tokens,
    seeded by the sample's number so reruns draw the same samples."""
    return dataclasses.replace(greedy_probe_request(question, is_fever), temperature=SAMPLE_TEMPERATURE,
                               top_p=SAMPLE_TOP_P, max_tokens=SAMPLE_MAX_TOKENS, seed=SAMPLE_PROBES.index(probe) + 1)
