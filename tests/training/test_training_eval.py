"""Training from the store, checkpoints, policies and evaluation on a small synthetic-outcome store."""

from __future__ import annotations

import dataclasses
import hashlib
import io

import numpy as np
import pytest
import torch

from forge_core.evaluation.cached import evaluate
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.setup import prepare_evaluation
from forge_core.routing.checkpoints import CheckpointError, load_checkpoint
from forge_core.routing.features import assemble_features
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.statistics import paired_bootstrap_ci, pareto_frontier
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config, Stage2Config
from forge_core.training.trainer import prepare_training_data, train_router

from support.stores import copy_store

HOST = "synthetic-host"
FAST_STAGE1 = Stage1Config(max_epochs=30, patience=5)


@pytest.fixture(scope="module")
def outcome_store(outcome_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """A private copy of the session's outcome store: these tests train and evaluate into it, and
    the session's store stays as other files expect it (no checkpoint)."""
    return copy_store(outcome_store, tmp_path_factory.mktemp("training-eval"))


def test_outcome_table_is_aligned(outcome_store: Store) -> None:
    table = load_outcome_table(outcome_store, HOST)
    assert len(table) == 3 * (40 + 20 + 20)
    assert table.arms[0] == "direct:no_think" and table.f1.shape == (len(table), 6)
    assert set(np.unique(table.splits)) == {"train", "dev", "test"}
    # the three samples' tokens (the greedy probe is the direct:no_think call, counted there)
    assert (table.sample_tokens_in == 3 * 60).all() and (table.sample_tokens_out == 3 * 5).all()


def test_preprocessing_fits_on_train_only(outcome_store: Store) -> None:
    data = prepare_training_data(outcome_store, HOST, "lite", 6)
    train = data.rows("train")
    assert data.features.shape[1] == 394
    structured = data.features[train][:, 384:]
    assert np.allclose(structured.mean(axis=0)[structured.std(axis=0) > 0], 0, atol=1e-5)
    assert data.normalizer.max_input_tokens == data.table.split("train").tokens_in.max()


def test_stage1_checkpoint_roundtrip_and_lineage(outcome_store: Store) -> None:
    checkpoint_id = train_router(outcome_store, TrainRequest(host=HOST, variant="lite", stage1=FAST_STAGE1))
    loaded = load_checkpoint(outcome_store, checkpoint_id)
    lineage = loaded.lineage
    assert lineage["variant"] == "lite" and lineage["input_dim"] == 394 and lineage["stage"] == 1
    assert (lineage["lambda_in"], lineage["lambda_out"], lineage["tau"]) == (0.10, 0.20, 1.0)
    assert len(lineage["store_snapshot"]) == 16 and lineage["normalizer"]["fit_split"] == "train"
    record = outcome_store.checkpoint(checkpoint_id)[0]
    assert record["metrics"]["dev_queries"] == 60 and record["training_log"]
    assert train_router(outcome_store, TrainRequest(host=HOST, variant="lite", stage1=FAST_STAGE1)) == checkpoint_id


def test_checkpoint_ids_are_those_recorded_here_on_any_machine(outcome_store: Store, tmp_path) -> None:
    """A checkpoint id hashes what the user chose (data snapshot, settings, seed, recipe version),
    not the trained weights: the ids recorded here (Lite Stage 1, flat six-arm Stage 1) come back on
    every machine, and features moved by 1e-6 (another floating-point path) give the same id, while
    the stored weights carry their own sha256."""
    # recorded when Stage 1's default was the paper's warm start: the lineage names it (arms 3)
    factorized = TrainRequest(host=HOST, variant="lite", stage1=dataclasses.replace(FAST_STAGE1, warm_start_arms=3))
    flat = TrainRequest(host=HOST, variant="lite", router_kind="flat",
                        stage1=Stage1Config(max_epochs=3, warm_start_arms=6))
    recorded = {factorized: "ckpt-516885d7babd", flat: "ckpt-9c3ca0d481d4"}
    assert [train_router(outcome_store, request) for request in recorded] == list(recorded.values())
    lineage = load_checkpoint(outcome_store, recorded[flat]).lineage
    assert lineage["router"] == "flat" and lineage["config"]["arms"] == 6

    perturbed = copy_store(outcome_store, tmp_path / "perturbed")
    with perturbed.transaction() as connection:
        connection.execute("UPDATE features SET vals = list_transform(vals, lambda v: v + 1e-6)")
    assert train_router(perturbed, factorized) == recorded[factorized]
    record, state = perturbed.checkpoint(recorded[factorized])
    assert record["weights_sha256"] == hashlib.sha256(state).hexdigest()


def test_weights_that_do_not_match_their_sha256_are_refused(outcome_store: Store, tmp_path) -> None:
    store = copy_store(outcome_store, tmp_path)
    checkpoint_id = train_router(store, TrainRequest(host=HOST, variant="lite", stage1=FAST_STAGE1))
    with store.transaction() as connection:  # one weight changed, the file still a valid torch file
        state = bytearray(store.checkpoint(checkpoint_id)[1])
        state[-200] ^= 0x01
        connection.execute("UPDATE checkpoints SET state = ? WHERE checkpoint_id = ?", [bytes(state), checkpoint_id])
    with pytest.raises(CheckpointError, match=f"checkpoint '{checkpoint_id}' is damaged"):
        load_checkpoint(store, checkpoint_id)


def test_stage2_starts_from_stage1_and_changes_the_policy(outcome_store: Store, tmp_path) -> None:
    store = copy_store(outcome_store, tmp_path)  # its poor parent must not become the shared store's router
    poor = Stage1Config(max_epochs=1, lr=1e-5)  # far from the learnable rule: Stage 2 has room to improve it
    parent = train_router(store, TrainRequest(host=HOST, variant="full", stage1=poor))
    child = train_router(store, TrainRequest(host=HOST, variant="full", stage=2,
                                             stage2=Stage2Config(steps=30, log_every=10, lr=1e-3)))
    record, parent_record = store.checkpoint(child)[0], store.checkpoint(parent)[0]
    assert record["parent"] == parent and record["stage"] == 2
    log = record["training_log"]
    assert [row["step"] for row in log] == [10, 20, 30] and all("dev_utility" in row for row in log)
    # dev selection kept a trained state (not Stage 1's), the one of the best logged dev utility
    selected = record["metrics"]["selected_step"]
    assert selected > 0 and max(log, key=lambda row: row["dev_utility"])["step"] == selected
    assert record["metrics"]["dev_utility"] > parent_record["metrics"]["dev_utility"]
    before = load_checkpoint(store, parent).router.state_dict()
    after = load_checkpoint(store, child).router.state_dict()
    assert all(not torch.equal(before[k], after[k]) for k in before)


def test_evaluation_takes_the_latest_stage_checkpoint_with_the_best_dev_utility(outcome_store: Store, tmp_path) -> None:
    from forge_core.evaluation.setup import router_policies, train_missing_routers

    store = copy_store(outcome_store, tmp_path)
    train_router(store, TrainRequest(host=HOST, variant="full", stage1=FAST_STAGE1))
    # two Stage-2 runs of the evaluation's seed (a router of another seed is never its candidate), say a
    # GRPO and an RLOO run
    children = [train_router(store, TrainRequest(host=HOST, variant="full", stage=2, stage2=Stage2Config(
        steps=40, log_every=10, lr=3e-3, loss_type=loss))) for loss in ("grpo", "rloo")]
    dev = {c: store.checkpoint(c)[0]["metrics"]["dev_utility"] for c in children}
    train_missing_routers(store, EvaluationSettings(HOST))  # the Lite and BGE+BM25 routers
    full = next(p for p in router_policies(store, EvaluationSettings(HOST)) if p.name == "forge_full")
    assert len(set(dev.values())) == 2  # two candidates the dev utility tells apart
    assert full.checkpoint_id in children and dev[full.checkpoint_id] == max(dev.values())


def test_routers_only_read_features_of_their_embedder(outcome_store: Store, tmp_path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.evaluation.setup import router_policies, train_missing_routers
    from forge_core.policies.context import evaluation_context

    store = copy_store(outcome_store, tmp_path)
    settings = EvaluationSettings(HOST)
    train_missing_routers(store, settings)
    lite = next(p for p in router_policies(store, settings) if p.name == "forge_lite")
    monkeypatch.setenv("FORGE_EMBEDDER", "all-MiniLM-L6-v2")  # the PyTorch runtime: another embedder
    with pytest.raises(ValueError, match="no full router .* on embedder 'all-MiniLM-L6-v2'"):
        router_policies(store, settings)
    context = evaluation_context(store, HOST, 6, CostWeights(0.1, 0.2))
    lite.fit(context)  # a chosen checkpoint still reads the features of its own embedder
    assert lite.live_embedder == "all-MiniLM-L6-v2@onnx"
    ours = assemble_features(store, HOST, "lite", context.table.keys, "all-MiniLM-L6-v2@onnx")
    np.testing.assert_array_equal(lite.features(context), ours)


def test_stage2_without_stage1_is_a_clear_error(outcome_store: Store) -> None:
    with pytest.raises(ValueError, match="forge train --stage 1 --variant bge"):
        train_router(outcome_store, TrainRequest(host=HOST, variant="bge", n_arms=3, stage=2,
                                                 stage2=Stage2Config(steps=2)))


def test_tampered_checkpoint_is_refused(outcome_store: Store, tmp_path) -> None:
    checkpoint_id = train_router(outcome_store, TrainRequest(host=HOST, variant="lite", stage1=FAST_STAGE1))
    record, state = outcome_store.checkpoint(checkpoint_id)
    tampered = Store(tmp_path / "t.duckdb")
    buffer = io.BytesIO()
    torch.save({"not": torch.zeros(1)}, buffer)
    tampered.save_checkpoint({**record, "checkpoint_id": "ckpt-bad"}, buffer.getvalue())
    with pytest.raises(CheckpointError, match="invalid"):
        load_checkpoint(tampered, "ckpt-bad")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tampered, "ckpt-missing")


def test_evaluate_reads_only_and_names_the_step_that_trains(outcome_store: Store, tmp_path) -> None:
    store = copy_store(outcome_store, tmp_path)
    with pytest.raises(ValueError, match=r"no \w+ router for host 'synthetic-host'.*`forge eval` trains it"):
        evaluate(store, EvaluationSettings(HOST, split="test"))
    prepare_evaluation(store, EvaluationSettings(HOST, split="test"))
    before = store.table_counts()
    evaluate(store, EvaluationSettings(HOST, split="test"))
    assert store.table_counts() == before  # no hidden write: features and routers came first


def test_evaluate_reports_every_policy(outcome_store: Store) -> None:
    from forge_core.policies.context import evaluation_context

    prepare_evaluation(outcome_store, EvaluationSettings(HOST, split="test"))
    report = evaluate(outcome_store, EvaluationSettings(HOST, split="test"))
    policies = report["policies"]
    expected = {"always_direct", "always_summary", "always_raw", "bm25_threshold", "adaptive_rag", "tiermem",
                "self_routing", "frugal_cascade", "ridge_utility", "oracle", "forge_full", "forge_lite", "bge_bm25_kl",
                "forge_full_fallback"}
    assert expected <= set(policies)
    raw = policies["always_raw"]
    assert raw["ci_vs_always_raw"] == [0.0, 0.0]
    assert policies["oracle"]["macro_utility"] >= max(p["macro_utility"] for p in policies.values()) - 1e-12
    context = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    test = context.rows("test")
    raw_is_best = context.utility[test].argmax(axis=1) == context.arm("raw:no_think")
    assert raw["oracle_agreement"] == pytest.approx(raw_is_best.mean()) and 0 < raw_is_best.mean() < 1
    # the synthetic rule is learnable: the router beats every fixed arm on utility
    assert policies["forge_lite"]["macro_utility"] > max(policies[a]["macro_utility"]
                                                         for a in ("always_direct", "always_summary", "always_raw"))
    assert set(raw["per_benchmark"]) == {"musique", "popqa", "2wikimultihopqa"}


def test_paired_bootstrap_exact_cases() -> None:
    benchmarks = np.array(["a"] * 4 + ["b"] * 4)
    same = np.ones(8)
    assert paired_bootstrap_ci(same, same, benchmarks) == (0.0, 0.0)
    better = paired_bootstrap_ci(np.ones(8), np.zeros(8), benchmarks)
    assert better == (1.0, 1.0)
    low, high = paired_bootstrap_ci(np.array([1, 0, 1, 0, 1, 1, 1, 1.0]), np.zeros(8), benchmarks, seed=3)
    assert 0.0 <= low < 0.75 < high <= 1.0


def test_pareto_frontier() -> None:
    points = [(1.0, 0.3), (2.0, 0.5), (1.5, 0.2), (3.0, 0.5), (0.5, 0.1), (2.5, 0.6)]
    assert pareto_frontier(points) == [4, 0, 1, 5]


def test_lambda_sweep_points_and_frontier(outcome_store: Store, tmp_path) -> None:
    from forge_core.errors import MissingStep
    from forge_core.evaluation.cached import SweepRequest, run_sweep

    store = copy_store(outcome_store, tmp_path)
    settings = EvaluationSettings(HOST, policy_names=("always_raw", "forge_lite", "oracle"))
    request = SweepRequest(((0.0, 0.0), (0.5, 0.5)), settings)
    with pytest.raises(MissingStep, match="no full router"):  # the Cached protocol never trains
        run_sweep(store, request)
    assert sum(len(prepare_evaluation(store, point)) for point in request.evaluations()) == 6
    result = run_sweep(store, request)
    assert len(result["points"]) == 6
    raw = [p for p in result["points"] if p["policy"] == "always_raw"]
    assert raw[0]["cost_k"] == raw[1]["cost_k"] and raw[0]["macro_utility"] > raw[1]["macro_utility"]
    frontier = [result["points"][i] for i in result["frontier"]]
    assert all(a["cost_k"] <= b["cost_k"] and a["macro_f1"] < b["macro_f1"] for a, b in zip(frontier, frontier[1:]))
    swept = [(p["policy"], p["lambda_in"], p["cost_k"], p["macro_f1"], p["macro_utility"]) for p in result["points"]]
    alone = [(name, point.weights.lambda_in, row["cost_k"], row["macro_f1"], row["macro_utility"])
             for point in request.evaluations() for name, row in evaluate(store, point)["policies"].items()]
    assert swept == alone  # the sweep's one loaded context gives what each point loading its own gives


@pytest.mark.e2e  # end to end: nine routers trained (about 23 s)
def test_repeated_evaluation_mean_and_sd(outcome_store: Store) -> None:
    from dataclasses import replace

    from forge_core.evaluation.cached import CachedRequest, run_cached

    settings = EvaluationSettings(HOST, policy_names=("always_raw", "forge_lite"))
    request = CachedRequest(settings, repeats=True, repeat_seeds=(0, 1))
    for evaluation in request.evaluations():
        prepare_evaluation(outcome_store, evaluation)
    report = run_cached(outcome_store, request)
    for name in ("forge_lite", "always_raw"):
        runs = [evaluate(outcome_store, replace(settings, split_seed=split_seed, seed=seed))["policies"][name]
                for split_seed in (0, 1) for seed in (0, 1)]
        summary = report["policies"][name]
        assert summary["runs"] == 4
        for metric in ("macro_f1", "cost_k"):
            values = np.array([run[metric] for run in runs])
            assert summary[f"{metric}_mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert summary[f"{metric}_sd"] == pytest.approx(values.std(ddof=1), rel=1e-12)
        assert summary["macro_f1_sd"] > 0  # the two split seeds test different queries


def test_pareto_points_move_with_the_weights(outcome_store: Store) -> None:
    from forge_core.evaluation.cached import CachedRequest, pareto_points
    from forge_core.evaluation.settings import EvaluationSettings

    def points(weights: CostWeights, by_benchmark: bool = False) -> dict:
        settings = EvaluationSettings(HOST, "test", weights=weights)
        return pareto_points(outcome_store, CachedRequest(settings, checkpoints=()), by_benchmark)

    cheap = points(CostWeights(0.0, 0.0))
    costly = points(CostWeights(2.0, 2.0))
    oracle = lambda result: next(p for p in result["points"] if p["policy"] == "oracle")  # noqa: E731
    assert oracle(costly)["cost_k"] < oracle(cheap)["cost_k"]
    assert {p["policy"] for p in cheap["points"]} >= {"always_raw", "bm25_threshold", "oracle"}
    per_benchmark = points(CostWeights(0.1, 0.2), by_benchmark=True)
    assert {p["benchmark"] for p in per_benchmark["points"]} == {"musique", "popqa", "2wikimultihopqa"}
    # the mix of fixed arms: its hull's arms are their own reference, query by query; no fixed arm is above it
    for result in (cheap, per_benchmark):
        fixed = [p for p in result["points"] if p["kind"] == "fixed arm"]
        hull = [p for p in fixed if p["on_hull"]]
        assert {p["benchmark"] for p in hull} == {p["benchmark"] for p in result["points"]}
        assert all(p["hull_gap"] == 0.0 and p["hull_gap_low"] == p["hull_gap_high"] == 0.0 for p in hull)
        assert all(p["hull_gap"] <= 1e-12 and p["hull_f1"] >= p["macro_f1"] - 1e-12 for p in fixed)


def test_training_job_logs_rows_while_it_runs(outcome_store: Store) -> None:
    from forge_core.training.trainer import train_router_job

    checkpoint_id = train_router_job(outcome_store, TrainRequest(host=HOST, variant="bge", stage1=FAST_STAGE1))
    jobs = outcome_store.jobs("train")
    job = jobs[jobs["message"] == checkpoint_id].iloc[0]
    assert job["status"] == "finished"
    logs = outcome_store.job_logs(job["job_id"])
    assert [row["epoch"] for row in logs] == list(range(1, len(logs) + 1)) and "dev_loss" in logs[0]


def test_export_then_load_demo_is_idempotent(outcome_store: Store, tmp_path) -> None:
    counts = outcome_store.export_tables(tmp_path / "demo")
    assert counts["arm_outcomes"] == 240 * 6 and counts["probe_outcomes"] == 240 * 4
    fresh = Store(tmp_path / "fresh.duckdb")
    added = fresh.load_exported(tmp_path / "demo")
    assert added["arm_outcomes"] == 1440 and added["checkpoints"] == counts["checkpoints"]
    assert set(fresh.load_exported(tmp_path / "demo").values()) == {0}
    coverage = fresh.coverage({HOST: 6})[HOST]
    assert coverage["queries_complete"] == 240 and coverage["with_probes"] == 240
    assert coverage["by_benchmark"]["musique"] == {"complete": 80, "with_probes": 80}


def test_an_export_loads_once_so_deleted_rows_stay_deleted(outcome_store: Store, tmp_path) -> None:
    outcome_store.export_tables(tmp_path / "demo", tables=("arm_outcomes",))
    fresh = Store(tmp_path / "fresh.duckdb")
    assert fresh.load_export_once(tmp_path / "demo") == {"arm_outcomes": 1440}
    with fresh.transaction() as connection:
        connection.execute("DELETE FROM arm_outcomes WHERE benchmark = 'musique'")
    assert fresh.load_export_once(tmp_path / "demo") is None
    assert len(fresh.arm_outcomes(HOST)) == 1440 - 80 * 6
    outcome_store.export_tables(tmp_path / "demo", tables=("arm_outcomes", "probe_outcomes"))  # a new export
    assert fresh.load_export_once(tmp_path / "demo") == {"arm_outcomes": 80 * 6, "probe_outcomes": 960}


def test_the_dashboard_loads_the_demo_into_a_store_without_outcomes(outcome_store: Store, tmp_path,
                                                                     monkeypatch) -> None:
    from forge_core.cli.dashboard import load_demo_on_first_run

    monkeypatch.setenv("FORGE_BENCHMARKS_DIR", str(tmp_path / "no-benchmarks"))  # the demo outcomes alone
    from forge_core.records import ArmOutcome
    from forge_core.store import utc_now

    outcome_store.export_tables(tmp_path / "demo", tables=("arm_outcomes",))
    empty, other = Store(tmp_path / "empty.duckdb"), Store(tmp_path / "other.duckdb")
    now = utc_now()
    other.write_arm_outcome(ArmOutcome(HOST, "musique", "q1", "raw:cot", "x", "x", 1.0, 1.0, 10, 2, 0, 5.0,
                                       None, 1, "hash", now, now))
    started = []
    monkeypatch.setattr("forge_core.precompute.background_views.start_background_views",
                        lambda store, cache_dir: started.append(store.path))
    load_demo_on_first_run(empty, tmp_path / "demo")
    load_demo_on_first_run(other, tmp_path / "demo")
    assert len(empty.arm_outcomes(HOST)) == 1440
    assert len(other.arm_outcomes(HOST)) == 1  # a store with outcomes of its own is left alone
    assert started == [empty.path]  # the first views of the loaded demo, in the background


def test_store_summary_cli_json(outcome_store: Store) -> None:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "FORGE_STORE": str(outcome_store.path)}
    result = subprocess.run([sys.executable, "-m", "forge_core.cli", "store", "summary", "--host", HOST,
                             "--split", "test", "--json"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    macro = {r["policy"]: r for r in rows if r["benchmark"] == "macro"}
    assert set(macro) == {"direct:no_think", "direct:cot", "summary:no_think", "summary:cot", "raw:no_think",
                          "raw:cot", "oracle"}
    assert macro["oracle"]["queries"] == 60 and macro["raw:no_think"]["tokens_out"] == 8


def test_deleting_checkpoints_keeps_lineage_whole(outcome_store: Store, tmp_path) -> None:
    store = copy_store(outcome_store, tmp_path)
    parent = train_router(store, TrainRequest(host=HOST, variant="full", stage1=FAST_STAGE1))
    child = train_router(store, TrainRequest(host=HOST, variant="full", stage=2, parent=parent,
                                             stage2=Stage2Config(steps=10, log_every=5)))
    with pytest.raises(ValueError, match=f"checkpoint {parent} is the parent of ckpt-"):
        store.delete_checkpoints([parent])
    with pytest.raises(ValueError, match="no checkpoint ckpt-missing"):
        store.delete_checkpoints([child, "ckpt-missing"])
    listed = store.checkpoints(HOST).set_index("checkpoint_id")["parent"].to_dict()
    assert listed[parent] is None and listed[child] == parent  # NULL is None, not NaN (the CLI table renders it)
    assert store.checkpoint(parent)[0]["parent"] is None
    store.delete_checkpoints(list(listed))  # the fixture store may hold other runs of the same family
    assert store.checkpoints(HOST).empty


def test_a_cancelled_training_job_stores_no_checkpoint(outcome_store: Store, tmp_path) -> None:
    from forge_core.training.trainer import train_router_job

    outcome_store = copy_store(outcome_store, tmp_path)  # the shared store stays as it is
    before = set(outcome_store.checkpoints()["checkpoint_id"])

    def cancel_at_epoch_2(row: dict) -> None:
        if row["epoch"] == 2:
            running = outcome_store.jobs("train")
            outcome_store.request_job_cancel(running[running["status"] == "running"]["job_id"].iloc[0])

    request = TrainRequest(host=HOST, variant="bge", stage1=Stage1Config(max_epochs=30, patience=30, seed=7))
    assert train_router_job(outcome_store, request, on_log=cancel_at_epoch_2) is None
    job = outcome_store.jobs("train").iloc[0]
    assert job["status"] == "cancelled" and job["message"] == "cancelled at epoch 2 of 30: no checkpoint kept"
    assert len(outcome_store.job_logs(job["job_id"])) == 2  # stopped at the epoch that saw the request
    assert set(outcome_store.checkpoints()["checkpoint_id"]) == before


def test_a_rerun_that_reproduces_a_checkpoint_is_recognised(outcome_store: Store, tmp_path) -> None:
    from forge_core.reports.checkpoint_views import reproduces_stored_checkpoint
    from forge_core.training.trainer import train_router_job

    outcome_store = copy_store(outcome_store, tmp_path)  # the shared store stays as it is

    request = TrainRequest(host=HOST, variant="bge", stage1=Stage1Config(max_epochs=3, seed=11))
    first, second = (train_router_job(outcome_store, request) for _ in range(2))
    assert first == second  # content-hashed: the same lineage and weights
    created = outcome_store.checkpoint(first)[0]["created_at"]
    jobs = outcome_store.jobs("train")
    runs = jobs[jobs["message"] == first].sort_values("started_at")
    assert len(runs) == 2
    assert not reproduces_stored_checkpoint(created, runs["started_at"].iloc[0])
    assert reproduces_stored_checkpoint(created, runs["started_at"].iloc[1])
