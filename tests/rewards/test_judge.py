"""The judge reward: its prompt and identity, and the resumable judge job on a rating double."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import RetrieverConfig
from forge_core.rewards.judge import judge_request, judge_reward_key, parse_rating
from forge_core.rewards.judge_job import judge_outcomes, plan_judging
from forge_core.rewards.judge_request import JudgeRequest

from support.judging import DOUBLE_CONFIG, RatingHost
from support.stores import copy_store, outcomes_under_retriever


def test_parse_rating_reads_the_first_rating() -> None:
    assert parse_rating("8") == 0.8
    assert parse_rating("Rating: 10/10") == 1.0
    assert parse_rating(" 0.") == 0.0
    assert parse_rating("correct") is None


def test_the_judge_sees_the_evidence_of_summary_and_raw_arms_only() -> None:
    with_evidence = judge_request("Who?", "Ann", "Ann wrote it.", is_fever=False).messages[1]["content"]
    direct = judge_request("Who?", "Ann", "", is_fever=False).messages[1]["content"]
    assert "Ann wrote it." in with_evidence and "Evidence" not in direct
    assert "Verdict given: SUPPORTS" in judge_request("A claim", "SUPPORTS", "", is_fever=True).messages[1]["content"]


def test_the_reward_key_depends_on_the_judge_configuration() -> None:
    assert judge_reward_key("aaa") != judge_reward_key("bbb")
    assert judge_reward_key("aaa") == judge_reward_key("aaa")


@pytest.fixture()
def store(outcome_store, tmp_path):
    return copy_store(outcome_store, tmp_path)


def test_judge_job_stores_every_arm_of_the_limited_queries_and_resumes(store) -> None:
    request = JudgeRequest(host="synthetic-host", judge_host="embedded", split="test", limit=4)
    request.check(store)
    report = asyncio.run(judge_outcomes(store, request, RatingHost()))
    assert (report.planned, report.judged, report.errors, report.status) == (24, 24, [], "finished")
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert len(rows) == 24 and rows["benchmark"].nunique() == 3  # round robin over the benchmarks
    assert rows["reward"].between(0, 1).all()
    again = asyncio.run(judge_outcomes(store, request, RatingHost()))
    assert (again.planned, again.judged) == (0, 0)
    assert store.job(report.job_id)["status"] == "finished"


def test_the_evidence_is_retrieved_once_per_query_not_per_arm(store, monkeypatch) -> None:
    from forge_core.rewards import judge_job

    queries = []

    def counting(retriever, question):
        queries.append(question)
        return retrieve_evidence(retriever, question)

    retrieve_evidence = judge_job.retrieve_evidence
    monkeypatch.setattr(judge_job, "retrieve_evidence", counting)
    request = JudgeRequest(host="synthetic-host", split="test", limit=3, concurrency=4)
    report = asyncio.run(judge_outcomes(store, request, RatingHost()))
    assert report.judged == 18 and len(queries) == len(set(queries)) == 3


def test_failed_calls_are_error_rows_judged_again_and_ten_in_a_row_stop_the_run(store) -> None:
    request = JudgeRequest(host="synthetic-host", split="dev", limit=2)
    first = asyncio.run(judge_outcomes(store, request, RatingHost(fail_on="x")))
    assert len(first.errors) == 10 and first.status.startswith("stopped: 10 judge calls failed")
    assert store.reward_outcomes("synthetic-host", first.reward_key)["reward"].isna().all()
    second = asyncio.run(judge_outcomes(store, request, RatingHost()))
    assert (second.planned, second.errors) == (12, [])
    assert store.reward_outcomes("synthetic-host", first.reward_key)["reward"].notna().all()


def test_a_reply_without_rating_counts_as_zero_and_is_reported(store) -> None:
    request = JudgeRequest(host="synthetic-host", split="dev", limit=1)
    report = asyncio.run(judge_outcomes(store, request, RatingHost(reply="I think so")))
    assert report.unrated == 6
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert (rows["reward"] == 0).all() and (rows["verdict"] == "I think so").all()


def test_another_judge_adds_rows_beside_the_first(store) -> None:
    request = JudgeRequest(host="synthetic-host", split="dev", limit=1)
    first = asyncio.run(judge_outcomes(store, request, RatingHost()))
    other = dataclasses.replace(DOUBLE_CONFIG, model="another-model")
    second = asyncio.run(judge_outcomes(store, request, RatingHost(other)))
    assert first.reward_key != second.reward_key and second.planned == 6
    assert len(store.reward_outcomes("synthetic-host")) == 12


def test_plan_refuses_unknown_things(store) -> None:
    with pytest.raises(InvalidInput):
        JudgeRequest(host="synthetic-host", split="everything").check(store)
    with pytest.raises(MissingStep):
        JudgeRequest(host="nobody").check(store)
    with pytest.raises(InvalidInput):
        JudgeRequest(host="synthetic-host", limit=0).check(store)
    with pytest.raises(InvalidInput, match="split seed must be one of 0, 1, 2"):
        JudgeRequest(host="synthetic-host", split_seed=7).check(store)
    assert plan_judging(store, JudgeRequest(host="synthetic-host", split="train", limit=1), "k")[0].arm


def test_the_tiny_embedded_host_judges_real_outcomes(store, tiny_server) -> None:
    from forge_core.hosts.lifetime import hosted

    async def judge_with_tiny():
        async with hosted(tiny_server) as judge:
            return await judge_outcomes(store, JudgeRequest(host="synthetic-host", split="test", limit=1), judge)

    report = asyncio.run(judge_with_tiny())
    assert (report.judged, report.errors) == (6, [])
    rows = store.reward_outcomes("synthetic-host", report.reward_key)
    assert len(rows) == 6 and (rows["tokens_in"] > 0).all() and rows["reward"].between(0, 1).all()


def test_a_judge_job_request_round_trips_and_runs_as_a_background_job(store, tmp_path) -> None:
    from forge_core import jobs
    from forge_core.hosts.registry import save_host_config

    from support.answering_server import AnsweringServer
    from support.enumeration import host_config

    request = JudgeRequest(host="synthetic-host", judge_host="test-host", split="dev", limit=1,
                           benchmarks=("musique",))
    assert jobs.read_request(jobs.write_request(request, tmp_path / "judge.json")) == request
    with AnsweringServer() as server:
        save_host_config(store, host_config(server.base_url))
        jobs.run_request(store, request)
    (row, progress), = jobs.recent_jobs(store, "judge")
    assert (progress.status, progress.done, progress.target) == ("finished", 6, 6)
    assert set(store.reward_outcomes("synthetic-host")["benchmark"]) == {"musique"}


def test_with_nothing_left_to_rate_the_judge_host_is_not_started(store, monkeypatch) -> None:
    from forge_core import jobs
    from forge_core.rewards import judge_job

    request = JudgeRequest(host="synthetic-host", judge_host="embedded", split="test", limit=1)
    stored_config = judge_job.get_host_config(store, "embedded")
    first = asyncio.run(judge_outcomes(store, request, RatingHost(stored_config)))  # rates as "embedded"
    assert first.judged == 6
    monkeypatch.setattr(judge_job, "hosted", None)  # starting a host would fail
    again = asyncio.run(judge_job.judge_on_host(store, request))
    assert (again.status, again.planned, again.job_id, again.reward_key) == ("nothing to do", 0, "", first.reward_key)
    assert len(jobs.recent_jobs(store, "judge")) == 1  # and no job row


def test_a_judge_run_under_another_retriever_rates_its_answers_with_its_evidence_under_their_own_key(store) -> None:
    from forge_core.rewards.sources import latest_judge_key

    config_hash = outcomes_under_retriever(store, "synthetic-host", RetrieverConfig("bm25-k4", k=4), 0.987)
    bm25 = JudgeRequest(host="synthetic-host", split="test", limit=1)
    first = asyncio.run(judge_outcomes(store, bm25, RatingHost()))
    with pytest.raises(MissingStep, match=r"no judge rewards under retriever 'bm25-k4': run `forge rewards judge "
                                          r"--host synthetic-host --retriever bm25-k4`"):
        latest_judge_key(store, "synthetic-host", config_hash, "bm25-k4")
    judge = RatingHost()
    under_k4 = asyncio.run(judge_outcomes(store, dataclasses.replace(bm25, retriever="bm25-k4"), judge))
    assert under_k4.reward_key != first.reward_key and under_k4.judged == 6  # the same query, rated apart
    raw_prompt = next(request.messages[1]["content"] for request in judge.requests
                      if "[1] " in request.messages[1]["content"] and "\n\n[4] " in request.messages[1]["content"])
    assert raw_prompt  # Raw's evidence under bm25-k4: four passages (bm25's has three)
    assert latest_judge_key(store, "synthetic-host", config_hash) == under_k4.reward_key
    assert latest_judge_key(store, "synthetic-host") == first.reward_key  # bm25's key: as before retrievers
    with pytest.raises(InvalidInput, match="unknown retriever 'dense'"):
        JudgeRequest(host="synthetic-host", retriever="dense").check(store)
