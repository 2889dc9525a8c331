"""The gates' probe enumeration: the draft request, its logprobs parsed from a recorded llama.cpp
response, and a run that resumes without re-sending a finished call (a recorded-response double)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from forge_core.enumeration.gate_probes import draft_request, enumerate_drafts, missing_drafts
from forge_core.evidence.prompts import greedy_probe_request
from forge_core.hosts.base import HostConfig
from forge_core.hosts.openai_compat import chat_completion_body
from forge_core.records import ProbeOutcome
from forge_core.store import Store, utc_now
from tests.support.draft_host import DRAFT_DOUBLE, DraftHost
from tests.support.stores import copy_store


def test_the_draft_is_the_greedy_probe_with_top_two_logprobs() -> None:
    request = draft_request("Who wrote Hamlet?", is_fever=False)
    assert request.messages == greedy_probe_request("Who wrote Hamlet?", False).messages
    assert (request.temperature, request.max_tokens) == (0.0, greedy_probe_request("q", False).max_tokens)
    body = chat_completion_body(HostConfig(name="h", kind="openai", model="m"), request)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)
    assert "logprobs" not in chat_completion_body(HostConfig(name="h", kind="openai", model="m"),
                                                  greedy_probe_request("q", False))


def test_the_parsed_logprobs_are_each_tokens_top_two_most_likely_first() -> None:
    generation = asyncio.run(DraftHost().generate(draft_request("q", False)))
    assert generation.top_logprobs == ((-1.004293441772461, -1.4950237274169922),
                                       (-0.008253395557403564, -5.363060474395752))


def _store_with_greedy_probes(outcome_store: Store, tmp_path: Path, n: int) -> tuple[Store, list[str]]:
    """A copy of the synthetic store where the double's host has a greedy probe on `n` queries."""
    store = copy_store(outcome_store, tmp_path)
    ids = store.split_ids("popqa", "train")[:n]
    now = utc_now()
    store.write_probe_outcome(*(ProbeOutcome(DRAFT_DOUBLE.name, "popqa", i, "greedy", "a", 60, 5, 1.0, None, "x", now)
                                for i in ids))
    return store, ids


def test_a_rerun_sends_only_the_drafts_not_yet_stored(outcome_store: Store, tmp_path: Path) -> None:
    store, ids = _store_with_greedy_probes(outcome_store, tmp_path, 5)
    examples = missing_drafts(store, DRAFT_DOUBLE.name)
    assert sorted(e.example_id for e in examples) == sorted(ids)
    failing = examples[2]
    first = DraftHost(fail_on=failing.question)
    report = asyncio.run(enumerate_drafts(store, first, examples))
    assert (report.answered, report.errors, len(first.requests)) == (4, 1, 5)
    stored = store.draft_logprobs(DRAFT_DOUBLE.name)  # error rows are not drafts
    assert len(stored) == 4 and failing.example_id not in set(stored["example_id"])
    np.testing.assert_allclose(stored["top2"].iloc[0], [-1.4950237274169922, -5.363060474395752])

    again = missing_drafts(store, DRAFT_DOUBLE.name)
    assert [e.example_id for e in again] == [failing.example_id]  # the error row is redone, nothing else
    second = DraftHost()
    asyncio.run(enumerate_drafts(store, second, again))
    assert len(second.requests) == 1
    assert missing_drafts(store, DRAFT_DOUBLE.name) == []
    assert len(store.draft_logprobs(DRAFT_DOUBLE.name)) == 5
