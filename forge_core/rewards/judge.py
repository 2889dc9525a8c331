"""The judge reward: a judge host rates one stored answer, given the question and, for Summary and
Raw arms, the evidence the answering host saw.

The judge replies with a rating from 0 to 10; the reward is rating / 10. A reply without a rating
counts as 0 (the judge did not affirm the answer) and keeps its text as the verdict; an empty
answer is rated 0 without a call. The reward's identity (`reward_key`) hashes the judge prompt, the
judge host's configuration hash and the retriever configuration the answers were made under:
another judge, an edited prompt or other evidence adds new rows beside the old ones and never mixes
with them.
"""

from __future__ import annotations

import hashlib
import re

from forge_core.hosts.base import GenerationRequest

JUDGE_SOURCE = "judge"
JUDGE_MAX_TOKENS = 8  # the rating and a little slack
JUDGE_SYSTEM = "You are a strict grader. You check whether an answer to a question is correct."
JUDGE_QA_TEMPLATE = (
    "{evidence}Question: {question}\nAnswer given: {answer}\n\n"
    "Is the answer given correct? Rate it from 0 (wrong) to 10 (certainly correct). Reply with the number only.")
JUDGE_FEVER_TEMPLATE = (
    "{evidence}Claim: {question}\nVerdict given: {answer}\n\n"
    "The verdict is one of SUPPORTS, REFUTES or NOT ENOUGH INFO. Is the verdict given correct? "
    "Rate it from 0 (wrong) to 10 (certainly correct). Reply with the number only.")
_RATING = re.compile(r"\b(10|[0-9])\b")


def judge_prompt_hash() -> str:
    """Short sha256 of the judge's system message and templates: part of the reward's identity."""
    text = "\x00".join((JUDGE_SYSTEM, JUDGE_QA_TEMPLATE, JUDGE_FEVER_TEMPLATE, str(JUDGE_MAX_TOKENS)))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rating_key(source: str, judge_config_hash: str, prompt_hash: str, retriever_hash: str = "") -> str:
    """The identity of the ratings of one source by one judge host configuration under one prompt,
    of the answers made under one retriever's evidence ("": the default BM25, whose keys predate
    retrievers and stay as they were)."""
    key = f"{source}|{judge_config_hash}|{prompt_hash}" + (f"|{retriever_hash}" if retriever_hash else "")
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def judge_reward_key(judge_config_hash: str) -> str:
    """The identity of the judge reward of one judge host configuration under the current prompt."""
    return rating_key(JUDGE_SOURCE, judge_config_hash, judge_prompt_hash())


def judge_request(question: str, answer: str, support_text: str, is_fever: bool) -> GenerationRequest:
    """The greedy judge request for one answer; `support_text` is "" for Direct arms."""
    evidence = f"Evidence the answerer saw:\n{support_text}\n\n" if support_text else ""
    template = JUDGE_FEVER_TEMPLATE if is_fever else JUDGE_QA_TEMPLATE
    messages = ({"role": "system", "content": JUDGE_SYSTEM},
                {"role": "user", "content": template.format(evidence=evidence, question=question, answer=answer)})
    return GenerationRequest(messages=messages, max_tokens=JUDGE_MAX_TOKENS, temperature=0.0)


def parse_rating(reply: str) -> float | None:
    """The first rating 0..10 in the judge's reply as a reward in [0, 1]; None without one."""
    match = _RATING.search(reply)
    return int(match.group(1)) / 10 if match else None
