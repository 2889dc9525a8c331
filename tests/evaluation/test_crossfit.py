"""Cross-fitted evaluation and the ridge_utility baseline, on the synthetic-outcome store."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forge_core.evaluation.crossfit import (
    CrossfitSettings,
    crossfit_folds,
    crossfit_identity,
    crossfit_report,
    fold_assignment,
    fold_splits,
    learned_policies,
    run_crossfit,
)
from forge_core.policies.baselines import RidgeUtility
from forge_core.policies.context import evaluation_context
from forge_core.policies.guard import MIX_GUARD_SUFFIX, guarded_router
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config

HOST = "synthetic-host"
FAST = CrossfitSettings(HOST, folds=3, stage1=Stage1Config(max_epochs=15))


def test_ridge_utility_learns_the_planted_rule(outcome_store: Store) -> None:
    context = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    policy = RidgeUtility()
    policy.fit(context)
    test = context.rows("test")
    actions = policy.decide(context, test).actions
    routed = context.utility[test][np.arange(len(test)), actions].mean()
    best_fixed = context.utility[test].mean(axis=0).max()
    assert routed > best_fixed + 0.05  # long questions to Raw, short ones to Direct


def test_folds_are_stratified_and_disjoint() -> None:
    benchmarks = np.array(["a"] * 10 + ["b"] * 7)
    assignment = fold_assignment(benchmarks, 3, seed=0)
    for benchmark, size in (("a", 10), ("b", 7)):
        counts = np.bincount(assignment[benchmarks == benchmark], minlength=3)
        assert counts.max() - counts.min() <= 1 and counts.sum() == size
    splits = fold_splits(benchmarks, assignment, 1, 0.25, seed=0)
    assert set(np.flatnonzero(splits == "test")) == set(np.flatnonzero(assignment == 1))
    assert (splits == "dev").sum() >= 2 and set(splits) == {"train", "dev", "test"}
    with pytest.raises(ValueError, match="fewer than 3 folds"):
        fold_assignment(np.array(["a", "a"]), 3, seed=0)


def test_crossfit_folds_hold_out_every_query_once(outcome_store: Store) -> None:
    base = evaluation_context(outcome_store, HOST, 6, CostWeights(0.1, 0.2))
    held_out = [(fold, context.rows("test")) for fold, context in crossfit_folds(base, 3, 0.2, split_seed=0)]
    assert [fold for fold, _ in held_out] == [0, 1, 2]
    assert sorted(np.concatenate([rows for _, rows in held_out]).tolist()) == list(range(len(base.table)))
    with pytest.raises(ValueError, match="fewer than 100 folds"):
        crossfit_folds(base, 100, 0.2, split_seed=0)  # refused at the call, before any fold


@pytest.mark.e2e  # a flow that trains: a crossfit run, interrupted and resumed (about 22 s on 2 busy cores)
def test_crossfit_decides_every_query_once_and_resumes(outcome_store: Store, tmp_path) -> None:
    from support.stores import copy_store

    store = copy_store(outcome_store, tmp_path)
    checkpoints_before = len(store.checkpoints())
    calls: list[str] = []

    def interrupt_in_second_fold(name: str) -> None:
        calls.append(name)
        if name == "forge_lite" and calls.count("forge_lite") == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_crossfit(store, FAST, on_policy=interrupt_in_second_fold)
    runs = store.crossfit_runs(HOST)
    assert runs.iloc[0]["folds_done"] == 1  # the first fold was stored whole, the second not at all
    folds_seen: list[int] = []
    report = run_crossfit(store, FAST, on_fold=lambda done, total: folds_seen.append(done))
    assert folds_seen == [1, 2, 3]
    results = store.crossfit_results(report["run_id"])
    queries = report["queries"]
    per_policy = results.groupby("policy").size()
    assert (per_policy == queries).all()  # one out-of-fold decision per query and policy
    assert len(store.checkpoints()) == checkpoints_before  # crossfit routers are never checkpoints
    assert store.jobs("crossfit").iloc[0]["status"] == "finished"

    policies = report["policies"]
    assert {"ridge_utility", "forge_full", "forge_lite", "bge_bm25_kl", "oracle", "always_raw"} <= set(policies)
    assert policies["always_raw"]["ci_f1_vs_always_raw"] == [0.0, 0.0]
    best = report["best_fixed_policy"]
    assert policies[best]["ci_utility_vs_best_fixed"] == [0.0, 0.0]
    assert report["best_fixed_arm"] in ("direct:no_think", "summary:no_think", "raw:no_think")
    assert not policies["oracle"]["deployable"]
    learned = learned_policies(report)  # what the Action map offers to colour by: fitted per fold, by kind
    assert {"ridge_utility", "forge_full", "forge_lite", "bge_bm25_kl"} <= set(learned)
    assert not set(learned) & {"oracle", "always_raw", best, "bm25_threshold"}
    # the planted rule is learnable out of fold: ridge and the Lite router beat every fixed arm
    for name in ("ridge_utility", "forge_lite"):
        assert policies[name]["ci_utility_vs_best_fixed"][0] > 0
    # against the oracle set: the oracle has no regret, a better policy has less, every interval holds its mean
    assert policies["oracle"]["regret"] == {"mean": 0.0, "ci": [0.0, 0.0]}
    assert policies["oracle"]["oracle_agreement"] == 1.0
    assert policies["ridge_utility"]["regret"]["mean"] < policies[best]["regret"]["mean"]
    for name, row in policies.items():
        low, high = row["regret"]["ci"]
        assert 0 <= low <= row["regret"]["mean"] <= high, name
        assert report["regret"][name] == row["regret"]
        assert set(row["cot_share"]) == set(np.unique(results["benchmark"]))
    assert set(policies["always_summary_cot"]["cot_share"].values()) == {1.0}
    assert set(policies["always_raw"]["cot_share"].values()) == {0.0}
    assert report["stage2_minus_stage1"] == {}  # a Stage-1 run has no Stage-2 routers
    # every routed decision stores its margin (utility units) over a runner-up; the report bins them
    guards = results["policy"].str.endswith("_guard")  # a guard's runner-up is its fallback arm
    routed = results[(results["kind"] == "router") & ~results["policy"].str.endswith("_fallback") & ~guards]
    assert routed["margin"].notna().all() and (routed["margin"] >= 0).all()
    assert (routed["runner_up"] != routed["arm"]).all()
    assert results.loc[results["kind"] != "router", "margin"].isna().all()
    assert report["margins_stored"]
    for name in ("forge_lite", "forge_full", "forge_lite_cond"):
        bins = policies[name]["reliability"]
        assert sum(b["queries"] for b in bins) == queries
        assert all(0 <= b["share_right"] <= 1 and b["low"] <= b["mean_margin"] <= b["high"] for b in bins)
    assert "reliability" not in policies["always_raw"]
    # the peers' units: answers with evidence against always-retrieve, thinking tokens against always-cot,
    # tokens against Always-Raw's at its F1
    units = {name: row["peer_units"] for name, row in policies.items()}
    assert units["always_raw"]["evidence_answers"]["share"] == 1.0 and units["always_direct"]["evidence_answers"][
        "share"] == 0.0
    assert units["always_raw"]["tokens_vs_always_raw"] | {"tokens": 0, "always_raw": 0} == {
        "tokens": 0, "always_raw": 0, "difference": 0.0, "ci": [0.0, 0.0], "ratio": 1.0,
        "f1_vs_always_raw": "not decidably different"}
    outcomes = store.arm_outcomes(HOST).set_index(["benchmark", "example_id", "arm"])["tokens_out"]
    raw_cot = results[results["policy"] == "always_raw_cot"]
    stored = outcomes.loc[list(zip(raw_cot["benchmark"], raw_cot["example_id"], raw_cot["arm"]))].to_numpy()
    from forge_core.statistics import macro

    thinking = units["always_raw_cot"]["thinking_tokens"]
    assert thinking["tokens"] == pytest.approx(macro(stored.astype(float), raw_cot["benchmark"].to_numpy()))
    assert thinking["tokens"] > 0 and thinking["difference"] == 0.0 and thinking["ratio"] == 1.0
    assert units["always_raw"]["thinking_tokens"]["tokens"] == 0.0
    assert units["always_raw"]["thinking_tokens"]["always_cot"] == pytest.approx(thinking["tokens"])
    for row in units.values():
        for unit in ("thinking_tokens", "tokens_vs_always_raw"):
            assert row[unit]["ci"][0] <= row[unit]["difference"] <= row[unit]["ci"][1]
        assert 0 <= row["evidence_answers"]["share"] <= 1
    # each router's guard: the router's arm where it deviates, the fold's fallback arm (a fixed arm) elsewhere
    assert {name + "_guard" for name in ("forge_lite", "forge_full", "bge_bm25_kl", "forge_lite_cond")} <= set(policies)
    for name in (name for name in policies if name.endswith("_guard")):
        guard, rows = policies[name]["guard"], results[results["policy"] == name].set_index(["benchmark", "example_id"])
        router = results[results["policy"] == guarded_router(name)].set_index(["benchmark", "example_id"])
        deviated = rows["arm"] != rows["runner_up"]
        assert (rows.loc[deviated, "arm"] == router.loc[rows.index[deviated], "arm"]).all()
        assert (rows["margin"] == router.loc[rows.index, "margin"]).all()
        fixed_arms = set(results.loc[results["kind"] == "fixed arm", "arm"])
        assert set(guard["fallback_arms"]) == set(rows["runner_up"]) and set(rows["runner_up"]) <= fixed_arms
        if name.endswith(MIX_GUARD_SUFFIX):  # each query falls back to the arm its fold's mix draws for its question
            assert_drawn_by_question(store, results[results["policy"] == name])
        assert guard["deviations"] == deviated.sum() and guard["alpha"] == 0.2
        assert (guard["realized_risk"] is None) == (guard["deviations"] == 0)
        if guard["deviations"]:
            assert guard["realized_risk"] == guard["losing_deviations"] / guard["deviations"]
        gain = guard["gain_vs_fallback"]
        assert gain["ci"][0] <= gain["difference"] <= gain["ci"][1] and 0 <= guard["coverage"] <= 1
    from forge_core.evaluation.oracle_measures import margin_reliability

    older = results[results["policy"] == "forge_lite"].drop(columns=["margin", "runner_up"])
    assert margin_reliability(older, np.zeros((len(older), 6)), []) is None  # a run stored before margins
    assert crossfit_report(store, report["run_id"]) == report  # read back, not recomputed

    from forge_core.evaluation import crossfit as crossfit_module

    cache = tmp_path / "reports"
    assert crossfit_module.finished_crossfit_reports(store, HOST, cache) == [report]  # computed, then kept
    rows = len(results)
    assert [path.name for path in cache.iterdir()] == [crossfit_module.report_file_name(report["run_id"], rows)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(crossfit_module, "crossfit_report", lambda *args: pytest.fail("recomputed"))
        assert crossfit_module.cached_crossfit_report(store, report["run_id"], cache) == report

    # `forge eval crossfit` prints the spread over split seeds: the sibling runs' reports are kept in the
    # cache directory's crossfit reports (the dashboard's folder), not computed again for every print
    from forge_core import config
    from forge_core.precompute.view_cache import CROSSFIT_CACHE

    assert crossfit_module.REPORT_CACHE == CROSSFIT_CACHE
    another_seed = {**report, "run_id": "another-split-seed"}  # the stored run is this report's sibling
    spread = crossfit_module.split_seed_spread(store, another_seed)
    assert len(spread["split_seeds"]) == 2
    kept = config.cache_dir() / CROSSFIT_CACHE / crossfit_module.report_file_name(report["run_id"], rows)
    assert kept.exists()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(crossfit_module, "crossfit_report", lambda *args: pytest.fail("recomputed"))
        assert crossfit_module.split_seed_spread(store, another_seed) == spread

    # a policy's rows added to the finished run later (as the gates' and guards' were): the kept report is
    # not served stale, but computed again with the policy
    added = results[results["policy"] == "always_raw"].assign(policy="always_raw_again")
    for fold, frame in added.groupby("fold"):
        store.write_crossfit_fold(report["run_id"], int(fold), frame.drop(columns=["run_id", "fold", "finished_at"]))
    assert "always_raw_again" in crossfit_module.cached_crossfit_report(store, report["run_id"], cache)["policies"]


@pytest.mark.e2e  # a flow that trains: a crossfit run, then it again with a policy added (about 20 s)
def test_a_run_keeps_its_id_across_renamed_fields_and_computes_an_added_policy_only(outcome_store: Store,
                                                                                   tmp_path) -> None:
    import dataclasses
    import json

    from support.stores import copy_store

    stored = FAST.to_dict()  # as an older FORGE stored it: the Stage-1 field under its older name
    stored["stage1"]["arms"] = stored["stage1"].pop("warm_start_arms")
    assert crossfit_identity(stored) == crossfit_identity(FAST.to_dict())
    assert crossfit_identity(dataclasses.replace(FAST, lambda_in=0.3).to_dict()) != crossfit_identity(stored)
    store = copy_store(outcome_store, tmp_path)
    without = run_crossfit(store, dataclasses.replace(FAST, conditioning=None))
    rows_before = store.crossfit_results(without["run_id"])
    fitted: list[str] = []
    report = run_crossfit(store, FAST, on_policy=fitted.append)
    assert report["run_id"] == without["run_id"]  # the same run, with the conditioned routers added
    added = {"forge_lite_cond", "forge_full_cond", "forge_lite_cond_guard", "forge_full_cond_guard",
             "forge_lite_cond_mix_guard", "forge_full_cond_mix_guard"}  # and their guards
    assert set(fitted) == added and len(fitted) == len(added) * FAST.folds
    kept = store.crossfit_results(report["run_id"]).merge(rows_before, on=list(rows_before.columns))
    assert len(kept) == len(rows_before)  # every earlier row stayed as it was
    assert set(report["policies"]) == set(without["policies"]) | set(fitted)
    assert json.loads(store.crossfit_runs(HOST).iloc[0]["settings"])["conditioning"] is None  # registered once


def assert_drawn_by_question(store: Store, rows: pd.DataFrame) -> None:
    """Per fold, a mix guard's fallback arms are at most two, split at one draw: ordered by their
    questions' draws (`arm_mix.question_draw`), the fallback arm changes at most once."""
    from forge_core.policies.arm_mix import question_draw

    questions = {(e.benchmark, e.example_id): e.question for benchmark in rows["benchmark"].unique()
                 for e in store.examples(benchmark)}
    for _, fold in rows.groupby("fold"):
        draws = [question_draw(questions[key]) for key in zip(fold["benchmark"], fold["example_id"])]
        fallbacks = fold["runner_up"].to_numpy()[np.argsort(draws)]
        assert len(set(fallbacks)) <= 2 and (fallbacks[1:] != fallbacks[:-1]).sum() <= 1


def test_a_guard_is_fitted_with_its_router_only() -> None:
    from forge_core.evaluation.crossfit import FoldRouter, missing_policies
    from forge_core.policies.baselines import FixedArm
    from forge_core.policies.guard import GuardedRouter

    router = FoldRouter("forge_lite", "lite", Stage1Config())
    guard, fixed = GuardedRouter(router), FixedArm("raw:no_think")
    policies = [fixed, router, guard]
    # a fold stored before the guards existed: its router is not trained again for them
    assert missing_policies(policies, {fixed.name, "forge_lite"}) == ([], [])
    assert missing_policies(policies, {fixed.name}) == ([router, guard], [router, guard])
    assert missing_policies(policies, set()) == (policies, policies)


def test_crossfit_stage2_reports_the_parents(outcome_store: Store, tmp_path) -> None:
    from forge_core.policies.registry import TrainedRouter, variants
    from forge_core.training.settings import Stage2Config

    from support.stores import copy_store

    store = copy_store(outcome_store, tmp_path)
    # The paper's warm start (a decisive support head, a uniform thinking head): with the six-arm default,
    # 5 epochs on this small synthetic store leave near-tied arms that 20 GRPO steps reorder (29% of routed
    # supports moved in one run), which says nothing about where Stage 2 starts
    settings = CrossfitSettings(HOST, folds=2, stage=2, stage1=Stage1Config(max_epochs=5, warm_start_arms=3),
                                stage2=Stage2Config(steps=20, log_every=10))
    report = run_crossfit(store, settings)
    policies = report["policies"]
    assert {"forge_full", "forge_full_stage1", "forge_lite_stage1", "bge_bm25_kl_stage1"} <= set(policies)
    # Stage 2 starts from its parent and keeps its best inner-dev state: 20 small steps leave the
    # routed arms and the utility close to the parent's (a router not started from it would not be)
    arms = store.crossfit_results(report["run_id"]).set_index(["policy", "benchmark", "example_id"])["arm"]
    for name in variants(TrainedRouter):
        parent = f"{name}_stage1"
        assert (arms[name].sort_index() == arms[parent].sort_index()).mean() >= 0.9, name
        assert policies[name]["macro_utility"] >= policies[parent]["macro_utility"] - 0.02, name
        gain = report["stage2_minus_stage1"][name]
        assert gain["difference"] == pytest.approx(policies[name]["macro_utility"] - policies[parent]["macro_utility"])
        assert gain["ci"][0] <= gain["difference"] <= gain["ci"][1]


def test_crossfit_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 2 folds"):
        CrossfitSettings(folds=1)
    with pytest.raises(ValueError, match="stage is 1 or 2"):
        CrossfitSettings(stage=3)


@pytest.mark.e2e  # end to end: `forge eval crossfit` processes, each training (about 17 s)
def test_crossfit_cli_json_and_bad_input(outcome_store: Store, tmp_path) -> None:
    import json
    import os
    import re
    import subprocess
    import sys

    from support.stores import copy_store

    store = copy_store(outcome_store, tmp_path)
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    command = [sys.executable, "-m", "forge_core.cli", "eval", "--host", HOST, "--protocol", "crossfit"]
    result = subprocess.run(command + ["--folds", "2", "--lambda-in", "0.6", "--lambda-out", "0.6", "--json"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["protocol"] == "crossfit" and report["folds"] == 2 and report["lambda_in"] == 0.6
    for row in report["policies"].values():
        assert {"macro_f1", "macro_utility", "cost_k", "ci_f1_vs_always_raw", "ci_utility_vs_best_fixed"} <= set(row)
    # the mix of fixed arms: a hull arm is its own reference (gap 0, zero width), no fixed arm lies above the hull
    hull = report["mix_hull"]["all"]
    assert [v["tokens"] for v in hull] == sorted(v["tokens"] for v in hull) and len(hull) >= 2
    fixed_gaps = [row["hull_gap"] for row in report["policies"].values() if row["kind"] == "fixed arm"]
    assert all(gap["difference"] <= 1e-12 for gap in fixed_gaps)
    assert sum(gap["ci"] == [0.0, 0.0] for gap in fixed_gaps) == len(hull)
    assert set(report["mix_hull"]["by_benchmark"]) == set(report["policies"]["always_raw"]["cot_share"])
    # the stated decision follows `forge decide`'s rule, checked against the report's own numbers: only
    # servable policies (fixed arms, FORGE routers) compete; the routers whose utility interval against
    # the best fixed arm lies above zero are its candidates; ridge and the baselines are excluded
    policies = report["policies"]
    fixed = [name for name, row in policies.items() if row["kind"] == "fixed arm"]
    best_fixed = max(fixed, key=lambda name: policies[name]["macro_utility"])
    assert report["best_fixed_policy"] == best_fixed
    winners = [name for name, row in policies.items()
               if row["kind"] == "router" and not name.endswith("_fallback")  # guards compete (`forge serve --guard`)
               and row["ci_utility_vs_best_fixed"][0] > 0]
    assert winners, "at 0.6/0.6 the fixture's routers beat the best fixed arm decidably"
    decision = report["decision"]
    assert decision["best_fixed_policy"] == best_fixed
    assert sorted(decision["router_candidates"]) == sorted(winners)
    assert decision["deploy"] in winners + fixed
    assert "ridge_utility" in decision["excluded"] and "oracle" not in decision["excluded"]
    printed = subprocess.run(command + ["--folds", "2", "--lambda-in", "0.6", "--lambda-out", "0.6"],
                             capture_output=True, text=True, env={**env, "COLUMNS": "240"})  # the stored run, printed
    assert printed.returncode == 0, printed.stderr
    assert "The peers' units" in printed.stdout and "forge_lite_guard: left its fallback" in printed.stdout
    raw_units = policies["always_raw"]["peer_units"]["evidence_answers"]
    cells = re.escape(f"{raw_units['share']:.1%} [{raw_units['ci'][0]:.1%}")  # its row of the peers' table
    assert re.search("always_raw +│ " + cells, printed.stdout)
    bad = subprocess.run(command + ["--folds", "1"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "at least 2 folds" in bad.stderr and "Traceback" not in bad.stderr


def test_reading_crossfit_runs_imports_no_torch() -> None:
    """Printing a stored run (`forge eval crossfit`, the decision, the Pareto page's crossfit view)
    needs no torch: only training a fold imports it (about 3 s of a print's 8 on a 2-core machine)."""
    import subprocess
    import sys

    code = ("import sys\nimport forge_core.cli.evaluate, forge_core.evaluation.crossfit, forge_core.evaluation.decide\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
