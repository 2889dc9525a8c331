"""What a plan covers: a second host on exactly the queries another host has every arm of; the
round-robin order of benchmarks."""

from __future__ import annotations

import pytest

from forge_core.enumeration.planning import EnumerationPlan, count_calls, plan_work, round_robin
from forge_core.errors import MissingStep
from forge_core.store import Store

BENCHMARKS = ("musique", "popqa", "2wikimultihopqa")


def test_queries_of_another_host_are_the_plan(outcome_store: Store) -> None:
    everything = plan_work(outcome_store, EnumerationPlan(host="second-host", split="test", benchmarks=BENCHMARKS))
    same = plan_work(outcome_store, EnumerationPlan(host="second-host", split="test", benchmarks=BENCHMARKS,
                                                    probes=True, queries_of="synthetic-host"))
    answered = {(b, i) for b in BENCHMARKS for i in outcome_store.finished_arms("synthetic-host", b)}
    keys = {(w.example.benchmark, w.example.example_id) for w in same}
    assert len(same) == 60 < len(everything) and keys <= answered  # 20 test queries per benchmark
    assert count_calls(same) == 60 * (6 + 3)  # six arms and three samples; the greedy probe is Direct's answer
    with pytest.raises(MissingStep, match="host 'nobody' has no stored outcomes"):
        EnumerationPlan(host="embedded-tiny", split="test", benchmarks=BENCHMARKS, queries_of="nobody").check(
            outcome_store)


def test_round_robin_takes_every_list_in_turn() -> None:
    assert round_robin([["a1", "a2", "a3"], [], ["c1"], ["d1", "d2"]]) == ["a1", "c1", "d1", "a2", "d2", "a3"]
    assert round_robin([]) == []
