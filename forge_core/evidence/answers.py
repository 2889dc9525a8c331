"""Final-answer extraction from host outputs, so reasoning text is never scored as the answer.

The CoT prompt asks the model to think step by step and give the final answer on a last line
starting with "Answer:". ``extract_final_answer`` applies this rule:

1. Find the last answer marker in the text, case-insensitive. Markers: "Answer:",
   "Final answer:", their markdown-bold forms ("**Answer:**", "**Answer**:",
   "**Final Answer:**"), and "The answer is" / "The final answer is" (optional colon).
2. If there is one, the answer is the first non-empty line after it ("Answer:\\nParis" gives
   "Paris"); a marker with nothing after it (an output cut at the token cap) gives "".
3. If there is none, the answer is the last non-empty line of the text.
4. The answer is cleaned: surrounding whitespace, markdown emphasis and code marks (* _ `),
   quotes (straight and curly), a leading "- " bullet and trailing periods are stripped,
   repeatedly, so '**"Paris".**' gives 'Paris'.

``extract_plain_answer`` is for direct (non-CoT) answers: it strips one leading answer marker
(same markers as above), takes the first non-empty line and cleans it the same way.
"""

from __future__ import annotations

import re

_BOLD = r"(?:\*\*|__)?"
_ANSWER_MARKER = re.compile(
    rf"{_BOLD}\b(?:final\s+)?answer\s*{_BOLD}\s*:\s*{_BOLD}"
    rf"|\bthe\s+(?:final\s+)?answer\s+is\b\s*:?",
    re.IGNORECASE,
)
_LEADING_MARKER = re.compile(rf"^\s*(?:{_ANSWER_MARKER.pattern})", re.IGNORECASE)
_LEADING_BULLET = re.compile(r"^[-\u2022]\s+")
_WRAPPING_CHARS = " \t*_`\"'\u201c\u201d\u2018\u2019"


def _clean_answer(line: str) -> str:
    """Strip surrounding markdown, quotes, a bullet and trailing periods until nothing changes."""
    previous = None
    answer = line
    while answer != previous:
        previous = answer
        answer = _LEADING_BULLET.sub("", answer.strip(_WRAPPING_CHARS))
        answer = answer.rstrip(".")
    return answer


def _first_non_empty_line(text: str) -> str:
    """The first line holding anything but whitespace, or "" when there is none."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _last_non_empty_line(text: str) -> str:
    """The last line holding anything but whitespace, or "" when there is none."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return ""


def extract_final_answer(text: str) -> str:
    """The final answer of a chain-of-thought output (rule in the module docstring)."""
    last_marker = None
    for last_marker in _ANSWER_MARKER.finditer(text):
        pass
    if last_marker is None:
        return _clean_answer(_last_non_empty_line(text))
    return _clean_answer(_first_non_empty_line(text[last_marker.end():]))


def extract_plain_answer(text: str) -> str:
    """The answer of a direct output: drop a leading answer marker, keep the first line."""
    without_marker = _LEADING_MARKER.sub("", text, count=1)
    return _clean_answer(_first_non_empty_line(without_marker))
