"""The support verdict: its parsing and prompt, and the judge job run with kind "support" on an
evaluator double (stored rows, their own key, resumption)."""

from __future__ import annotations

import asyncio

import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.rewards.judge_job import judge_outcomes
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.rewards.rating_kinds import JUDGE_KIND, SUPPORT_KIND
from forge_core.rewards.sources import latest_judge_key
from forge_core.rewards.support_verdict import (
    CONTRADICTED,
    NO_EVIDENCE,
    NOT_ENOUGH_INFO,
    SUPPORTED,
    parse_support_label,
    support_request,
    verdict_counts,
)

from support.judging import DOUBLE_CONFIG, RatingHost, VerdictHost
from support.stores import copy_store


@pytest.mark.parametrize(("reply", "label"), [
    ("SUPPORTED", SUPPORTED), ("Supported.", SUPPORTED), ("The evidence supports it", SUPPORTED),
    ("CONTRADICTED", CONTRADICTED), ("it contradicts the answer", CONTRADICTED),
    ("NOT ENOUGH INFO", NOT_ENOUGH_INFO), ("Not supported", NOT_ENOUGH_INFO), ("unsupported", NOT_ENOUGH_INFO),
    ("not enough information, though SUPPORTED is tempting", NOT_ENOUGH_INFO),
    ("SUPPORTED, not CONTRADICTED", SUPPORTED), ("Yes", None), ("", None),
])
def test_the_first_label_of_the_reply_is_the_verdict(reply: str, label: str | None) -> None:
    assert parse_support_label(reply) == label


def test_the_evaluator_always_sees_evidence_and_the_fever_verdict() -> None:
    qa = support_request("Who wrote it?", "Ann", "Ann wrote it.", is_fever=False).messages[1]["content"]
    assert "Evidence:\nAnn wrote it." in qa and "Answer given: Ann\n" in qa
    assert NO_EVIDENCE in support_request("Who?", "Ann", "  ", is_fever=False).messages[1]["content"]
    fever = support_request("A claim", "REFUTES", "text", is_fever=True).messages[1]["content"]
    assert "Claim: A claim\nVerdict given: REFUTES" in fever


def test_support_and_judge_rows_of_one_evaluator_have_different_keys() -> None:
    assert SUPPORT_KIND.reward_key("cfg") != JUDGE_KIND.reward_key("cfg")
    assert verdict_counts([1.0, 0.5, 0.5, None]) == {SUPPORTED: 1, NOT_ENOUGH_INFO: 2, CONTRADICTED: 0}


@pytest.fixture()
def store(outcome_store, tmp_path):
    return copy_store(outcome_store, tmp_path)


def test_support_job_stores_one_verdict_per_arm_resumes_and_stays_apart_from_judge_rewards(store) -> None:
    request = JudgeRequest(host="synthetic-host", split="test", limit=3, kind="support")
    request.check(store)
    evaluator = VerdictHost()
    report = asyncio.run(judge_outcomes(store, request, evaluator))
    assert (report.planned, report.judged, report.errors, report.status) == (18, 18, [], "finished")
    assert report.job_id.startswith("support-")
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert len(rows) == 18 and set(rows["source"]) == {"support"}
    assert set(rows["reward"]) <= {0.0, 0.5, 1.0} and rows["reward"].nunique() > 1
    # every arm, Direct included, is checked against passages
    assert all(NO_EVIDENCE not in r.messages[1]["content"] for r in evaluator.requests)
    direct = [r for r in evaluator.requests if "Evidence:\n\n" in r.messages[1]["content"]]
    assert direct == []
    again = asyncio.run(judge_outcomes(store, request, VerdictHost()))
    assert (again.planned, again.judged) == (0, 0)
    with pytest.raises(MissingStep):  # support verdicts are no judge rewards
        latest_judge_key(store, "synthetic-host")
    judged = asyncio.run(judge_outcomes(store, JudgeRequest(host="synthetic-host", split="test", limit=3),
                                        RatingHost()))
    assert judged.planned == 18 and judged.reward_key != report.reward_key
    assert latest_judge_key(store, "synthetic-host") == judged.reward_key


def test_a_reply_without_a_label_is_stored_as_not_enough_info_and_reported(store) -> None:
    request = JudgeRequest(host="synthetic-host", split="dev", limit=1, kind="support")
    report = asyncio.run(judge_outcomes(store, request, VerdictHost(DOUBLE_CONFIG, reply="maybe")))
    assert report.unrated == 6
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert (rows["reward"] == 0.5).all() and (rows["verdict"] == "maybe").all()


def test_an_unknown_kind_is_refused_in_one_line(store) -> None:
    with pytest.raises(InvalidInput, match="unknown rating kind 'nli'"):
        JudgeRequest(host="synthetic-host", kind="nli").check(store)


@pytest.mark.slow  # 12 calls with the passages in every prompt: 181 s on the shared 2-core machine
def test_the_tiny_embedded_host_gives_real_verdicts_for_two_queries(store, tiny_server) -> None:
    from forge_core.hosts.lifetime import hosted

    async def check_with_tiny():
        async with hosted(tiny_server) as evaluator:
            request = JudgeRequest(host="synthetic-host", split="test", limit=2, kind="support")
            return await judge_outcomes(store, request, evaluator)

    report = asyncio.run(check_with_tiny())
    assert (report.judged, report.errors) == (12, [])
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert len(rows) == 12 and (rows["tokens_in"] > 0).all() and set(rows["reward"]) <= {0.0, 0.5, 1.0}
    assert (rows["verdict"] != "").all()  # the model's own replies, kept


def test_a_support_request_round_trips_as_a_background_job_request(tmp_path) -> None:
    from forge_core import jobs

    request = JudgeRequest(host="synthetic-host", judge_host="embedded-tiny", split="dev", limit=2, kind="support")
    assert jobs.read_request(jobs.write_request(request, tmp_path / "support.json")) == request
