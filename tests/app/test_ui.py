"""Unit tests of the dashboard's shared UI helpers that need no running page."""

from app import live_view


def test_a_shown_answer_names_the_inputs_changed_since() -> None:
    answered = {"question": "q", "benchmark": "musique", "host": "h", "router": "ckpt-a", "weights": (0.1, 0.2)}
    assert live_view.changed_inputs(answered, dict(answered)) == ""
    moved = {**answered, "question": "q2", "weights": (0.3, 0.2)}
    assert live_view.changed_inputs(answered, moved) == "the question, the weights"
