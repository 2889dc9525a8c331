"""`forge serve --mix`'s policy: the arm each question draws from the shares, and the mix's parsing."""

from __future__ import annotations

import pytest

from forge_core.errors import InvalidInput
from forge_core.policies.arm_mix import mix_option, parse_mix, question_draw


def test_the_draw_is_the_questions_and_spends_the_shares() -> None:
    """The same question (up to whitespace and case) draws the same arm; 4,000 distinct questions
    spend the arms in the mix's proportions (within 4 binomial standard deviations)."""
    mix = parse_mix("direct:no_think=0.3,summary:no_think=0.7", 6)
    assert question_draw("Who wrote  Hamlet?") == question_draw(" who wrote hamlet? ")
    assert mix.arm_for("Who wrote Hamlet?") == mix.arm_for("who  wrote HAMLET?")
    n = 4000
    drawn = [mix.arm_for(f"question number {i}")[0].name for i in range(n)]
    share = drawn.count("direct:no_think") / n
    assert abs(share - 0.3) < 4 * (0.3 * 0.7 / n) ** 0.5
    assert mix.option == "direct:no_think=0.3,summary:no_think=0.7"
    assert parse_mix(mix_option(["raw:no_think", "direct:no_think"], [2 / 3, 1 / 3]), 6).shares == pytest.approx(
        (2 / 3, 1 / 3), abs=1e-9)


@pytest.mark.parametrize(("text", "message"), [
    ("direct:no_think=0.5,summary:think_high=0.5", "not in the 6-arm alphabet"),
    ("direct=0.5,summary:no_think=0.5", "unknown arm 'direct'"),
    ("direct:no_think=0.5,summary:no_think=0.4", "sum to 0.9"),
    ("direct:no_think=0,summary:no_think=1", "lies in \\(0, 1\\]"),
    ("direct:no_think=1.5,summary:no_think=-0.5", "lies in \\(0, 1\\]"),
    ("direct:no_think=0.5,direct:no_think=0.5", "twice"),
    ("direct:no_think", "takes ARM=SHARE"),
    ("direct:no_think=half,summary:no_think=0.5", "is a number"),
])
def test_a_bad_mix_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_mix(text, 6)
