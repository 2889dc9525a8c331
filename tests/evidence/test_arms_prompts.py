"""The action alphabet and the prompt of every arm (snapshots)."""

from __future__ import annotations

import pytest

from forge_core.arms import Arm, alphabet, arm_index, parse_arm
from forge_core.evidence.prompts import ANSWER_MAX_TOKENS, COT_MAX_TOKENS, SYSTEM_PROMPT, build_request


def test_alphabets_are_support_major() -> None:
    assert [a.name for a in alphabet(6)] == [
        "direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think", "raw:cot"]
    assert [a.name for a in alphabet(3)] == ["direct:no_think", "summary:no_think", "raw:no_think"]
    assert len(alphabet(12)) == 12
    assert arm_index(Arm("raw", "think_high"), 12) == 2 * 4 + 3
    assert arm_index(Arm("summary", "cot"), 6) == 3
    assert [arm_index(a, 12) for a in alphabet(12)] == list(range(12))


def test_bad_arms_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown arm 'raw:deep'"):
        parse_arm("raw:deep")
    with pytest.raises(ValueError, match="3, 6 or 12"):
        alphabet(4)
    with pytest.raises(ValueError, match="not in the 6-arm alphabet"):
        arm_index(Arm("raw", "think_low"), 6)


def user_text(arm: str, support: str = "", fever: bool = False) -> str:
    return build_request("Who wrote Dune?", support, parse_arm(arm), fever).messages[1]["content"]


SNAPSHOTS = {
    ("direct:no_think", False): "Question: Who wrote Dune?\n\n"
    "Answer the question with a short answer (a few words), without explanation.",
    ("raw:no_think", False): "Evidence:\n[1] Dune\nDune is a novel by Frank Herbert.\n\nQuestion: Who wrote Dune?\n\n"
    "Answer the question with a short answer (a few words), without explanation.",
    ("summary:cot", False): "Evidence:\n[1] Dune\nDune is a novel by Frank Herbert.\n\nQuestion: Who wrote Dune?\n\n"
    "Answer the question with a short answer (a few words), without explanation. Let us think step by step. "
    "Write your reasoning briefly, then give the final answer on the last line in the form \"Answer: <short answer>\".",
    ("direct:no_think", True): "Claim: Who wrote Dune?\n\nDecide whether the claim is supported by facts, refuted by "
    "facts, or whether there is not enough information. Reply with exactly one label: SUPPORTS, REFUTES or NOT ENOUGH "
    "INFO.",
    ("direct:cot", True): "Claim: Who wrote Dune?\n\nDecide whether the claim is supported by facts, refuted by "
    "facts, or whether there is not enough information. Reply with exactly one label: SUPPORTS, REFUTES or NOT ENOUGH "
    "INFO. Let us think step by step. Write your reasoning briefly, then give the final answer on the last line in the "
    "form \"Answer: <SUPPORTS, REFUTES or NOT ENOUGH INFO>\".",
}


@pytest.mark.parametrize("arm,fever", list(SNAPSHOTS))
def test_prompt_snapshots(arm: str, fever: bool) -> None:
    support = "" if arm.startswith("direct") else "[1] Dune\nDune is a novel by Frank Herbert."
    assert user_text(arm, support, fever) == SNAPSHOTS[(arm, fever)]


def test_requests_caps_budgets_and_shared_prefix() -> None:
    support = "[1] Dune\nDune is a novel by Frank Herbert."
    plain = build_request("Q?", support, parse_arm("raw:no_think"), False)
    cot = build_request("Q?", support, parse_arm("raw:cot"), False)
    low = build_request("Q?", support, parse_arm("raw:think_low"), False)
    high = build_request("Q?", support, parse_arm("raw:think_high"), False)
    assert plain.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert (plain.max_tokens, cot.max_tokens, low.max_tokens) == (ANSWER_MAX_TOKENS, COT_MAX_TOKENS, ANSWER_MAX_TOKENS)
    budgets = (plain.thinking_budget, cot.thinking_budget, low.thinking_budget, high.thinking_budget)
    assert budgets == (None, None, 1024, 4096)
    assert plain.temperature == 0.0
    instruction_start = plain.messages[1]["content"].index("Answer the question")
    assert cot.messages[1]["content"][:instruction_start] == plain.messages[1]["content"][:instruction_start]
