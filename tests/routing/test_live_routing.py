"""The one routing-and-answering function (`route_and_answer`) against a test-double host, its
session totals, and `forge ask --route` on the real tiny host."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from forge_core.arms import parse_arm
from forge_core.evidence.answering import load_retriever
from forge_core.hosts.base import HostConfig
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.live import OVERRIDE, answer_verdict, ask_routed, default_router_id, session_totals
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.resources import require_tiny_model

BENCHMARK = "musique"


@pytest.fixture(scope="module")
def double_host() -> Iterator[HostConfig]:
    """An OpenAI-compatible test double answering "answer <hash>" with usage from the prompt size."""
    with AnsweringServer() as server:
        yield HostConfig(name="synthetic-host", kind="openai", model="m", base_url=server.base_url, max_retries=0)


def test_router_picks_the_arm_and_always_raw_is_beside_it(trained_store: tuple[Store, str],
                                                          double_host: HostConfig) -> None:
    store, checkpoint_id = trained_store
    checkpoint = load_checkpoint(store, checkpoint_id)
    retriever = load_retriever(store, BENCHMARK)
    result = ask_routed(store, double_host, retriever, "  Who founded the city of Rome?  ", BENCHMARK,
                        checkpoint=checkpoint, always_raw="answer")
    assert result.question == "Who founded the city of Rome?" and result.checkpoint_id == checkpoint_id
    assert result.arm == max(result.probabilities, key=result.probabilities.get)
    confidence = result.confidence
    assert confidence.chosen == result.arm and confidence.margin >= 0
    runner_up = result.probabilities[confidence.runner_up]
    assert confidence.margin == pytest.approx(math.log(result.probabilities[result.arm] / runner_up), abs=1e-6)
    assert result.to_json()["confidence"]["margin_utility"] == pytest.approx(confidence.margin, abs=1e-6)
    assert sum(result.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
    assert (result.probe_calls, result.probe_tokens, result.f1) == (0, 0, None)  # Lite; a typed question
    assert result.raw_answer is not None and result.raw_cost.tokens_in == result.raw_answer.tokens_in
    assert result.tokens_saved == result.raw_cost.tokens - result.answer.tokens_in - result.answer.tokens_out
    assert (result.host_calls, result.tokens) == (1, result.answer.tokens_in + result.answer.tokens_out)
    view = result.to_json()
    assert view["raw_cost_tokens"] == result.raw_cost.tokens and view["always_raw"]["answer"].startswith("answer ")
    assert view["router"] == checkpoint_id and result.history_row()["router"] == checkpoint_id  # the output keys stay

    alone = ask_routed(store, double_host, retriever, "Who founded the city of Rome?", BENCHMARK, checkpoint=checkpoint)
    assert (alone.raw_cost, alone.raw_answer, alone.tokens_saved, alone.host_calls) == (None, None, None, 1)
    assert alone.to_json()["raw_cost_tokens"] is None and session_totals([alone]).raw_tokens == 0


def test_override_and_stored_raw_cost(trained_store: tuple[Store, str], double_host: HostConfig) -> None:
    store, _ = trained_store
    example = store.examples(BENCHMARK, store.split_ids(BENCHMARK, "train")[:1])[0]
    retriever = load_retriever(store, BENCHMARK)
    stored = store.arm_outcomes("synthetic-host", BENCHMARK).set_index(["example_id", "arm"])
    row = stored.loc[(example.example_id, "raw:no_think")]
    result = ask_routed(store, double_host, retriever, example.question, BENCHMARK, arm=parse_arm("direct:no_think"),
                        example=example, always_raw="cost")
    assert (result.checkpoint_id, result.arm, result.probabilities, result.raw_answer) == (
        OVERRIDE, "direct:no_think", {}, None)
    assert result.raw_cost.source == "stored outcome"
    assert result.raw_cost.tokens == row["tokens_in"] + row["tokens_out"]
    assert result.f1 == 0.0 and result.golds == example.answers  # "answer <hash>" is not the gold answer
    assert answer_verdict(result.f1) == "no token overlap" and result.confidence is None
    assert not result.nothing_to_compare

    raw = ask_routed(store, double_host, retriever, example.question, BENCHMARK, arm=parse_arm("raw:no_think"),
                     example=example, always_raw="cost")
    assert raw.raw_cost.source == "this answer" and raw.raw_answer is raw.answer and raw.tokens_saved == 0
    assert raw.nothing_to_compare  # Always-Raw's own arm: one call
    totals = session_totals([result, raw])
    assert totals.questions == 2 and totals.tokens == result.tokens + raw.tokens
    assert totals.tokens_saved == result.tokens_saved  # the Raw question saved nothing
    assert (totals.mean_f1, totals.both_scored, totals.both_f1, totals.both_raw_f1) == (0.0, 1, 0.0, 0.0)


def test_bad_requests_are_refused(trained_store: tuple[Store, str], double_host: HostConfig) -> None:
    store, checkpoint_id = trained_store
    retriever = load_retriever(store, BENCHMARK)
    with pytest.raises(ValueError, match="the question is empty"):
        ask_routed(store, double_host, retriever, " \n ", BENCHMARK, arm=parse_arm("raw:no_think"))
    with pytest.raises(ValueError, match="not both or neither"):
        ask_routed(store, double_host, retriever, "Q?", BENCHMARK)
    with pytest.raises(ValueError, match="always_raw must be one of off, cost, answer"):
        ask_routed(store, double_host, retriever, "Q?", BENCHMARK, arm=parse_arm("raw:no_think"), always_raw="yes")
    with pytest.raises(ValueError, match="no reasoning budget"):
        ask_routed(store, double_host, retriever, "Q?", BENCHMARK, arm=parse_arm("raw:think_low"))
    assert default_router_id(store, "synthetic-host") == checkpoint_id
    with pytest.raises(ValueError, match="no Lite router for host 'embedded-tiny'"):
        default_router_id(store, "embedded-tiny")


def test_ask_request_resolves_its_names_and_answers_routed_or_by_hand(
        trained_store: tuple[Store, str], double_host: HostConfig, tmp_path) -> None:
    from forge_core.errors import InvalidInput, MissingStep
    from forge_core.hosts.registry import save_host_config
    from forge_core.routing.ask import AskRequest, run_ask
    from forge_core.routing.guard import Guard

    from support.stores import copy_store

    store = copy_store(trained_store[0], tmp_path)
    save_host_config(store, double_host)
    example_id = store.split_ids(BENCHMARK, "test")[0]
    ask = AskRequest(benchmark=BENCHMARK, host_name="synthetic-host", example_id=example_id, always_raw="cost")
    routed = run_ask(store, ask)
    assert routed.checkpoint_id == trained_store[1]
    assert routed.question == store.examples(BENCHMARK, [example_id])[0].question
    assert routed.f1 is not None and routed.raw_cost is not None
    fallback = next(arm for arm in routed.probabilities if arm != routed.arm)  # `--guard`: held, or let through
    held = run_ask(store, ask, guard=Guard(fallback, math.inf, 0.2, 0, 0))
    assert (held.arm, held.router_arm, held.guard_record()["held"]) == (fallback, routed.arm, True)
    assert held.margin == routed.margin  # the router's own margin, not the fallback's
    through = run_ask(store, ask, guard=Guard(fallback, -math.inf, 0.2, 0, 0))
    assert (through.arm, through.guard_record()["held"]) == (routed.arm, False)
    by_hand = run_ask(store, AskRequest("Who founded Rome?", BENCHMARK, "synthetic-host", arm="summary:no_think"))
    assert (by_hand.checkpoint_id, by_hand.arm, by_hand.raw_cost) == (OVERRIDE, "summary:no_think", None)
    checked = AskRequest("Who founded Rome?", BENCHMARK, "synthetic-host", arm="summary:no_think")
    answered = run_ask(store, checked, inputs=checked.check(store))  # the caller's check, not repeated
    assert (answered.checkpoint_id, answered.arm, answered.raw_cost) == (OVERRIDE, "summary:no_think", None)
    with pytest.raises(InvalidInput, match="unknown benchmark"):
        AskRequest("Q?", "nope", "synthetic-host").check(store)
    with pytest.raises(InvalidInput, match="no example 'missing' in musique"):
        AskRequest(benchmark=BENCHMARK, host_name="synthetic-host", example_id="missing").check(store)
    with pytest.raises(InvalidInput, match="not both"):
        AskRequest("Q?", BENCHMARK, arm="raw:no_think", checkpoint_id="ckpt")
    with pytest.raises(InvalidInput, match="always_raw is one of"):
        AskRequest("Q?", BENCHMARK, always_raw="yes")
    with pytest.raises(InvalidInput, match="no reasoning budget"):
        AskRequest("Q?", BENCHMARK, "synthetic-host", arm="raw:think_low").check(store)
    with pytest.raises(MissingStep, match="no Lite router"):
        AskRequest("Q?", BENCHMARK, "embedded-tiny").check(store)


def forge(store: Store, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], check=False, capture_output=True, text=True,
                          env={**os.environ, "FORGE_STORE": str(store.path)}, timeout=600)


def test_forge_ask_route_on_the_tiny_host(trained_store: tuple[Store, str]) -> None:
    require_tiny_model()
    store, checkpoint_id = trained_store
    example_id = store.split_ids(BENCHMARK, "test")[0]
    result = forge(store, "ask", "--route", "--router", checkpoint_id, "--compare-raw", "--host", "embedded-tiny",
                   "--benchmark", BENCHMARK, "--example", example_id, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)  # the warning below goes to stderr, the JSON stays whole
    trained_on = store.checkpoint(checkpoint_id)[0]["host"]
    assert f"router {checkpoint_id} was trained on host '{trained_on}', not 'embedded-tiny'" in result.stderr
    assert {"arm", "probabilities", "answer", "tokens_in", "tokens_out", "latency_ms", "routing_ms",
            "raw_cost_tokens", "always_raw"} <= set(answer)
    assert answer["arm"] == max(answer["probabilities"], key=answer["probabilities"].get)
    assert answer["tokens_in"] > 0 and answer["f1"] is not None and answer["always_raw"]["f1"] is not None
    assert answer["raw_cost_tokens"] == answer["always_raw"]["tokens_in"] + answer["always_raw"]["tokens_out"]

    for args, message in [(["ask", " ", "--route"], "the question is empty"),
                          (["ask", "Q?", "--route", "--host", "embedded-tiny"], "no Lite router for host"),
                          (["ask", "Q?", "--compare-raw"], "go with --route"),
                          (["ask", "Q?", "--guard", "0.2"], "go with --route")]:
        refused = forge(store, *args)
        assert refused.returncode == 2 and message in refused.stderr and "Traceback" not in refused.stderr


def test_answer_verdicts() -> None:
    assert [answer_verdict(f1) for f1 in (None, 0.0, 0.4, 1.0)] == [
        "unscored", "no token overlap", "some token overlap", "exact match"]


def test_the_default_router_is_the_mark_a_new_run_does_not_take_over(trained_store: tuple[Store, str],
                                                                     tmp_path) -> None:
    from forge_core.errors import InvalidInput
    from forge_core.reports.checkpoint_views import checkpoint_names
    from forge_core.training.request import TrainRequest
    from forge_core.training.settings import Stage1Config
    from forge_core.training.trainer import train_router_job

    from support.stores import copy_store

    store, marked = copy_store(trained_store[0], tmp_path), trained_store[1]

    def quick_run(seed: int) -> str:
        return train_router_job(store, TrainRequest(host="synthetic-host", variant="lite",
                                                    stage1=Stage1Config(max_epochs=2, seed=seed)))

    newer = quick_run(3)
    assert default_router_id(store, "synthetic-host") == newer  # no mark: the newest Lite checkpoint
    store.set_default_router("synthetic-host", marked)
    quick_run(4)
    assert store.marked_default_router("synthetic-host") == marked
    assert default_router_id(store, "synthetic-host") == marked  # the mark holds against a newer run
    with pytest.raises(InvalidInput, match="no checkpoint"):
        store.set_default_router("another-host", marked)
    store.set_default_router("synthetic-host", None)
    assert store.marked_default_router("synthetic-host") is None

    marked_by_cli = forge(store, "checkpoints", "--set-default", newer)
    assert marked_by_cli.returncode == 0, marked_by_cli.stderr
    listed = json.loads(forge(store, "checkpoints", "--json").stdout)["checkpoints"]
    assert [row["checkpoint_id"] for row in listed if row["default"]] == [newer]
    names = checkpoint_names(store.checkpoints())  # each with the pages' name beside its full id
    assert [row["name"] for row in listed] == [names[row["checkpoint_id"]] for row in listed]
    refused = forge(store, "checkpoints", "--set-default", "ckpt-missing")
    assert refused.returncode == 2 and "no checkpoint 'ckpt-missing'" in refused.stderr
    assert "Traceback" not in refused.stderr
    both = forge(store, "checkpoints", "--delete", newer, "--set-default", newer)
    assert both.returncode == 2 and "choose --delete or --set-default, not both" in both.stderr
    assert "Traceback" not in both.stderr and store.checkpoint(newer) is not None
