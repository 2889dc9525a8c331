"""The pieces of a deployment without a server: the budget pacer (exact steps, and holding a mean
on a simulated router), the traffic log (concurrent appends, a cut last line, rotation, fsync),
client identities, `--budgets` files and the traffic summary."""

from __future__ import annotations

import hashlib
import json
import math
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from forge_core import traffic_log
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import ArmAnswer, Evidence
from forge_core.evidence.prompts import ClientChat
from forge_core.hosts.base import Generation
from forge_core.reports.traffic import parse_since, summarize_traffic
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.confidence import confidence
from forge_core.routing.utility import CostWeights
from forge_core.server.budget import BudgetController, load_budgets_file, ray_bounds
from forge_core.server.deployment import client_identity
from forge_core.server.metrics import ServerMetrics
from forge_core.traffic_log import TrafficLog, read_traffic


def test_the_pacer_steps_log_lambda_by_the_relative_error_within_the_ray() -> None:
    controller = BudgetController("b", 100.0, CostWeights(0.1, 0.2), 2.0, (0.02, 1.5), gain=0.1, window=3)
    controller.record(200)  # 100% over: log lambda_in + 0.1
    assert controller.weights() == pytest.approx((0.1 * math.exp(0.1), 0.2 * math.exp(0.1)))
    controller.record(50)  # 50% under: - 0.05
    assert controller.weights()[0] == pytest.approx(0.1 * math.exp(0.05))
    for _ in range(200):
        controller.record(10_000)
    assert controller.weights() == pytest.approx((1.5, 3.0))  # clipped at the ray's end
    state = controller.state()
    assert (state.requests, state.window_requests, state.realized_mean) == (202, 3, 10_000)
    assert state.realized_ci == (10_000, 10_000)
    assert state.at_bound == "highest"  # the router spends more than the target even at its dearest price


def test_a_target_out_of_reach_pins_the_weights_and_is_flagged(tmp_path: Path) -> None:
    controller = BudgetController("b", 400.0, CostWeights(0.1, 0.2), 2.0, (0.02, 1.5))
    assert controller.at_bound() is None
    log = TrafficLog(tmp_path)
    for i in range(300):  # a router that never spends more than 150 tokens
        controller.record(150)
        log.append({"kind": "request", "id": str(i), "time": float(i), "endpoint": "chat", "client": "c",
                    "status": 200, "arm": "direct:no_think", "tokens": 150, "latency_ms": 1.0, "budget": "b",
                    "budget_target": 400.0, "budget_bound": controller.at_bound(),
                    "lambda_in": controller.weights()[0], "lambda_out": controller.weights()[1]})
    log.close()
    assert controller.weights() == pytest.approx((0.02, 0.04)) and controller.at_bound() == "lowest"
    budget = summarize_traffic(read_traffic(tmp_path))["budgets"]["b"]
    assert (budget["target"], budget["at_bound"], budget["out_of_reach"]) == (400.0, "lowest", True)
    assert budget["window"]["n"] == 200


def test_ray_bounds_keep_both_weights_in_the_trained_range() -> None:
    assert ray_bounds(CostConditioning(low=0.02, high=3.0), 2.0) == (0.02, 1.5)
    assert ray_bounds(CostConditioning(low=0.02, high=3.0), 0.5) == (0.04, 3.0)


def test_the_pacer_holds_a_simulated_routers_mean_through_a_shift() -> None:
    """A router whose share of Raw answers falls with lambda_in; the costs shift half-way."""
    rng = np.random.default_rng(0)
    target = 300.0
    controller = BudgetController("b", target, CostWeights(0.02, 0.04), 2.0, (0.02, 1.5))
    spent = []
    for n in range(4000):
        raw_share = 1.0 / (1.0 + (controller.weights()[0] / (0.1 if n < 2000 else 0.4)) ** 2)
        raw_cost = 700 if n < 2000 else 550
        spent.append(raw_cost + rng.integers(0, 80) if rng.random() < raw_share else 60 + rng.integers(0, 30))
        controller.record(int(spent[-1]))
    assert abs(np.mean(spent[2500:]) - target) < 0.05 * target
    assert abs(np.mean(spent[500:2000]) - target) < 0.05 * target


def test_margin_is_the_log_probability_gap_to_the_runner_up() -> None:
    assert confidence({"a": 0.5, "b": 0.25, "c": 0.25}, "a").margin == pytest.approx(math.log(2))
    assert confidence({"a": 0.4, "b": 0.4, "c": 0.2}, "a").margin == 0.0
    assert confidence({"a": 1.0}, "a").margin is None


def test_the_log_keeps_every_record_of_concurrent_writers(tmp_path: Path) -> None:
    log = TrafficLog(tmp_path)
    threads = [threading.Thread(target=lambda k=k: [log.append({"kind": "request", "id": f"{k}-{i}", "time": i})
                                                    for i in range(200)]) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(read_traffic(tmp_path).requests) == 800  # readable before close: every append is written at once
    log.close()
    ids = [r["id"] for r in read_traffic(tmp_path).requests]
    assert len(set(ids)) == 800


def test_a_cut_last_line_is_skipped_and_segments_rotate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traffic_log, "SEGMENT_BYTES", 200)
    log = TrafficLog(tmp_path)
    for i in range(10):
        log.append({"kind": "request", "id": str(i), "time": float(i), "pad": "x" * 50})
    log.close()
    segments = sorted(tmp_path.glob("traffic-*.jsonl"))
    assert len(segments) >= 4
    with segments[-1].open("a") as handle:
        handle.write('{"kind": "request", "id": "cut')  # a kill mid-write
    records = read_traffic(tmp_path, since=5.0)
    assert [r["id"] for r in records.requests] == ["5", "6", "7", "8", "9"] and records.skipped_lines == 1


def test_appends_are_fsynced_within_a_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flusher thread fsyncs an append while the log stays open (close is not what makes it durable), and
    it looks at least every FSYNC_INTERVAL_S, which is a second at most: its pauses are recorded, not timed."""
    pauses: list[float] = []  # the flusher's waits between two looks

    class RecordedEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            pauses.append(timeout)
            return super().wait(timeout)

    monkeypatch.setattr(traffic_log, "threading", SimpleNamespace(Lock=threading.Lock, Thread=threading.Thread,
                                                                  Event=RecordedEvent))
    synced = threading.Event()
    real_fsync = traffic_log.os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if threading.current_thread().name == "traffic-fsync":
            synced.set()

    monkeypatch.setattr(traffic_log.os, "fsync", fsync)
    log = TrafficLog(tmp_path)
    log.append({"kind": "request", "id": "1", "time": 1.0})
    synced.wait()  # by the flusher, the log open (a flusher that never fsyncs hangs until pytest's --timeout)
    assert b'"id":"1"' in log.path.read_bytes()
    log.close()
    assert pauses and all(pause <= traffic_log.FSYNC_INTERVAL_S for pause in pauses)
    assert traffic_log.FSYNC_INTERVAL_S <= 1.0


def test_clients_are_named_or_hashed_never_kept_as_keys() -> None:
    assert client_identity({"x-forge-client": "team-a"}) == "team-a"
    hashed = client_identity({"authorization": "Bearer sk-secret"})
    assert hashed == "key-" + hashlib.sha256(b"sk-secret").hexdigest()[:12] and "secret" not in hashed
    assert client_identity({"x-forge-client": "bad name!", "authorization": "Bearer k"}).startswith("key-")
    assert client_identity({}) == "anonymous"


def test_budgets_files_are_checked_in_one_line(tmp_path: Path) -> None:
    good = tmp_path / "budgets.json"
    good.write_text(json.dumps({"team-a": 300, "key-0123456789ab": 150.5}))
    assert load_budgets_file(good) == {"team-a": 300.0, "key-0123456789ab": 150.5}
    for content, message in [("[1, 2]", "non-empty JSON object"), ('{"a": -1}', "positive number"),
                             ("{nope", "not a JSON object")]:
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        with pytest.raises(InvalidInput, match=message):
            load_budgets_file(bad)
    with pytest.raises(InvalidInput, match="no file"):
        load_budgets_file(tmp_path / "missing.json")


def test_since_takes_durations_and_iso_times() -> None:
    assert parse_since("15m", now=10_000.0) == 9_100.0
    assert parse_since("2026-01-01T00:00:00") == 1767225600.0
    with pytest.raises(InvalidInput, match="--since"):
        parse_since("yesterday")


@pytest.mark.parametrize("since, back", [("90s", timedelta(seconds=90)), ("15m", timedelta(minutes=15)),
                                         ("2h", timedelta(hours=2)), ("1d", timedelta(days=1)),
                                         ("1.5h", timedelta(minutes=90))])
def test_since_reads_each_duration_unit_as_itself(since: str, back: timedelta) -> None:
    """`forge traffic --since 2h` is two hours back, not two minutes (every unit, exactly)."""
    now = 1_000_000.0
    assert now - parse_since(since, now=now) == back.total_seconds()


def test_since_reads_an_iso_time_as_a_moment_not_a_duration() -> None:
    """An ISO time is that moment (its own offset, else UTC), whatever `now` is."""
    midnight_utc = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    assert parse_since("2026-01-01T02:00:00+02:00", now=0.0) == midnight_utc == 1767225600.0
    assert parse_since(" 2026-01-01T00:00:00 ", now=0.0) == midnight_utc


def test_the_summary_counts_arms_budgets_shadows_and_ranks_requests(tmp_path: Path) -> None:
    log = TrafficLog(tmp_path)
    for i, (arm, tokens) in enumerate([("direct:no_think", 80), ("raw:no_think", 500), ("raw:no_think", 520)]):
        log.append({"kind": "request", "id": str(i), "time": float(i), "endpoint": "chat", "client": "c",
                    "budget": "default", "status": 200, "arm": arm, "tokens": tokens, "latency_ms": 10.0 * i,
                    "host_calls": 1, "lambda_in": 0.1, "lambda_out": 0.2})
    log.append({"kind": "request", "id": "x", "time": 9.0, "endpoint": "chat", "client": "c", "status": 401,
                "tokens": 0, "latency_ms": 1.0})
    log.append({"kind": "shadow", "id": "0", "time": 1.0, "shadow": "raw", "raw_tokens": 480, "saving": 400,
                "calls": 1, "tokens_spent": 480})
    log.append({"kind": "shadow", "id": "1", "time": 2.0, "shadow": "candidate", "agree": False,
                "candidate_arm": "direct:no_think", "served_tokens": 500, "candidate_tokens": 90, "calls": 1,
                "tokens_spent": 90, "status": "answered"})
    log.close()
    summary = summarize_traffic(read_traffic(tmp_path))
    assert (summary["requests"], summary["answered"], summary["by_status"]) == (4, 3, {"200": 3, "401": 1})
    assert summary["arms"] == {"raw:no_think": 2, "direct:no_think": 1}
    assert summary["tokens"]["mean"] == pytest.approx(366.667, abs=1e-3)
    assert summary["budgets"]["default"]["lambda_in"] == 0.1
    assert summary["shadow_raw"]["saving_tokens"]["mean"] == 400
    assert summary["candidate"]["agreement"] == 0.0 and summary["candidate"]["token_difference"]["mean"] == -410
    assert [r["id"] for r in summary["costliest"]][:2] == ["2", "1"] and summary["slowest"][0]["id"] == "2"


class RatingHostDouble:
    """A test double of an evaluator host: rates every answer it is shown from a fixed table."""

    def __init__(self, ratings: dict[str, str]) -> None:
        self.ratings = ratings
        self.prompts: list[str] = []

    async def generate(self, request):  # noqa: ANN001, ANN201 (the Host.generate shape)
        prompt = request.messages[-1]["content"]
        self.prompts.append(prompt)
        reply = next(text for answer, text in self.ratings.items() if f"Answer given: {answer}\n" in prompt)
        return type("Generation", (), {"text": reply})()


def test_both_answers_of_a_disagreement_are_rated_with_their_own_evidence() -> None:
    import asyncio

    from forge_core.server.shadow import rate_both

    evidence = type("Evidence", (), {"support_text": lambda self, support: "" if support == "direct"
                                     else f"<{support} evidence>"})()  # as `Evidence.support_text`
    served = type("Answer", (), {"arm": "raw:no_think", "extracted": "Paris"})()
    candidate = type("Answer", (), {"arm": "direct:no_think", "extracted": "Lyon"})()
    result = type("Result", (), {"benchmark": "musique", "question": "Capital of France?", "answer": served,
                                 "evidence": evidence})()
    judge = RatingHostDouble({"Paris": "9", "Lyon": "I cannot say"})
    ratings = asyncio.run(rate_both(judge, result, candidate))
    assert ratings == {"served_rating": 0.9, "candidate_rating": None}
    assert "<raw evidence>" in judge.prompts[0] and not judge.prompts[1].startswith("Evidence")


class FixedUsageHostDouble:
    """A test double of a host: answers every request with "Paris" and the same token counts."""

    def __init__(self, tokens_in: int, tokens_out: int) -> None:
        self.tokens_in, self.tokens_out = tokens_in, tokens_out
        self.requests: list = []

    async def generate(self, request):  # noqa: ANN001, ANN201 (the Host.generate shape)
        self.requests.append(request)
        return Generation("Paris", self.tokens_in, self.tokens_out)


def test_the_shadow_raw_saving_is_always_raw_minus_served() -> None:
    """`shadow_raw`'s traffic-log saving and its /metrics sample: Always-Raw's tokens minus the
    served answer's (positive: routing spent less)."""
    import asyncio

    from forge_core.server.shadow import shadow_raw

    served = ArmAnswer("direct:no_think", "Paris", "Paris", 50, 10, 0, 1.0, "")
    result = type("Result", (), {"benchmark": "musique", "evidence": Evidence("Capital of France?", ()),
                                 "answer": served, "tokens": 60})()  # as `RoutedAnswer`
    host, metrics = FixedUsageHostDouble(400, 8), ServerMetrics()
    fields = asyncio.run(shadow_raw(host, metrics, "forge", result, ClientChat()))
    assert fields == {"raw_tokens": 408, "calls": 1, "tokens_spent": 408, "saving": 348}
    assert len(host.requests) == 1 and metrics.savings["forge"].mean == 348


def candidate_quality(directory: Path, shadows: list[dict]) -> dict:
    """The candidate's quality difference `forge traffic` reports over one answered request per
    shadow record in `shadows` (its agreement and ratings)."""
    log = TrafficLog(directory)
    for i, shadow in enumerate(shadows):
        log.append({"kind": "request", "id": str(i), "time": float(i), "endpoint": "chat", "client": "c",
                    "status": 200, "arm": "raw:no_think", "tokens": 500, "latency_ms": 1.0, "host_calls": 1})
        log.append({"kind": "shadow", "id": str(i), "time": float(i), "shadow": "candidate", "served_tokens": 500,
                    "candidate_arm": "direct:no_think", **shadow})
    log.close()
    return summarize_traffic(read_traffic(directory))["candidate"]["quality_difference"]


def test_the_candidates_quality_difference_counts_agreements_as_zero(tmp_path: Path) -> None:
    quality = candidate_quality(tmp_path, [{"agree": True},
                                           {"agree": False, "served_rating": 0.9, "candidate_rating": 0.5},
                                           {"agree": False, "served_rating": 0.2, "candidate_rating": 0.6}])
    assert quality["n"] == 3 and quality["mean"] == pytest.approx(0.0)


def test_the_candidates_quality_difference_is_candidate_minus_served(tmp_path: Path) -> None:
    """The sign of the shadow candidate's quality difference: positive where the candidate's answer
    was rated better than the served one."""
    quality = candidate_quality(tmp_path, [{"agree": False, "served_rating": 0.3, "candidate_rating": 0.8},
                                           {"agree": False, "served_rating": 0.5, "candidate_rating": 0.6}])
    assert (quality["n"], quality["mean"]) == (2, 0.3)  # (0.5 + 0.1) / 2
    assert quality["ci95"] == [-0.092, 0.692]  # 0.3 -+ 1.96 * 0.2828 / sqrt(2)
