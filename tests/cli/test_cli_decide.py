"""`forge decide` on a fresh `load-demo` store: one chain of evidence from the recommended recipe's
runs to a checkpoint of the same recipe, a budget as a constraint, a deployment manifest that
`forge serve --manifest` serves exactly (its id at /health and in the traffic log) and refuses where
the store no longer holds it; a newer run of another recipe changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from forge_core import config
from forge_core.evaluation.decide import decide_from_outcomes, named_decision, stored_outcomes
from forge_core.evaluation.manifest import manifest_id, read_manifest, serve_settings_of
from forge_core.evaluation.recipe import checkpoint_recipe, run_recipe
from forge_core.evaluation.recipe_choice import MeasuredRecipe
from forge_core.evidence.embedders import embedder_name
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.arm_mix import parse_mix
from forge_core.reports.traffic import summarize_traffic
from forge_core.routing.utility import CostWeights
from forge_core.server.app import ServeSettings, serving_in_thread
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store
from forge_core.traffic_log import read_traffic, served_manifests

from support.counting_host import CountingHost
from support.resources import require_demo_export
from support.stores import copy_store

PAPER_STAGE1 = "paper's Stage 1 (3 NoThink arms), 1 weight draw, 6 arms"  # the recommended recipe's label


@pytest.fixture(scope="module")
def demo_store(imported_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    require_demo_export()
    store = copy_store(imported_store, tmp_path_factory.mktemp("demo"))
    store.load_export_once(config.demo_dir())
    return store


def forge(store: Store, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORGE_STORE": str(store.path), "FORGE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "forge_core.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def decide(store: Store, cache: Path, *args: str) -> dict:
    result = forge(store, cache, "decide", *args, "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def lineage_recipe(store: Store, checkpoint_id: str) -> dict:
    lineages = {row.checkpoint_id: json.loads(row.lineage) for row in store.checkpoints().itertuples()}
    lineage = lineages[checkpoint_id]
    return checkpoint_recipe(lineage, lineages.get(lineage.get("parent"))).to_dict()


def test_at_stored_weights_every_servable_policy_competes_under_one_recipe(demo_store: Store, tmp_path: Path) -> None:
    decided = decide(demo_store, tmp_path, "--lambda-in", "0.6", "--lambda-out", "0.6")
    assert decided["recipe"]["label"].startswith(PAPER_STAGE1)
    assert decided["recipe"]["recipe_id"] == decided["recommended_recipe"] and decided["recipe_measured"]
    assert decided["evidence"] == "stored run" and decided["crossfit_run_ids"] == ["crossfit-80ad6021182d"]
    assert decided["policy"] == "forge_lite_cond" and decided["gain"]["utility"]["ci"][0] > 0
    assert {"forge_lite", "bge_bm25_kl", "forge_full_cond"} <= set(decided["policies"])  # per-weight routers compete
    assert "ridge_utility" in decided["excluded"] and "oracle" not in decided["policies"]
    assert lineage_recipe(demo_store, decided["checkpoint_id"]) == decided["recipe"]  # served = evaluated
    assert decided["serve_command"] == (f"forge serve --host embedded --router {decided['checkpoint_id']} "
                                        "--lambda-in 0.6 --lambda-out 0.6")
    fixed = decide(demo_store, tmp_path, "--lambda-in", "0.1", "--lambda-out", "0.2")
    assert fixed["policy"] == "always_summary" and fixed["arm"] == "summary:no_think"
    assert fixed["serve_command"] == "forge serve --host embedded --arm summary:no_think"


def test_recipes_are_measured_and_the_simplest_unbeaten_one_recommended(demo_store: Store, tmp_path: Path) -> None:
    result = forge(demo_store, tmp_path, "recipes", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    choice = json.loads(result.stdout)
    recommended = choice["recommended"]["recipe_id"]
    assert choice["recommended"]["label"].startswith(PAPER_STAGE1) and choice["measured"]
    standings = {row["label"].split(", 6 arms")[0]: row for row in choice["standings"]}
    whole = standings["whole-alphabet Stage 1 (6 arms), 1 weight draw"]
    assert recommended in whole["beaten_by"]  # the paper's Stage 1 beats the whole alphabet beyond chance
    assert not standings["paper's Stage 1 (3 NoThink arms), 1 weight draw"]["beaten_by"]


def test_a_budget_is_a_constraint(demo_store: Store, tmp_path: Path) -> None:
    decided = decide(demo_store, tmp_path, "--lambda-in", "0.1", "--lambda-out", "0.2", "--budget-tokens", "200")
    assert decided["budget_tokens"] == 200.0 and decided["weights_from_budget"] is False
    assert decided["tokens_ci"][0] <= 200.0
    assert {"always_summary", "always_raw"} <= set(decided["over_budget"])
    assert decided["policy"] not in decided["over_budget"]
    assert "within 200 tokens a query" in decided["sentence"]
    # the reference within the budget: the best mix of fixed arms that spends it, and the routers' F1 gain over it
    mix = decided["mix"]
    fixed_arms = {row["arm"] for row in decided["policies"].values() if row["kind"] == "fixed arm"}
    assert set(mix["arms"]) <= fixed_arms and sum(mix["shares"]) == pytest.approx(1.0)
    assert len(mix["arms"]) == 2 and mix["tokens"] == 200.0  # Summary alone is over it, mixed with Direct it is not
    assert mix["deployed"] and mix["servable"]  # no servable router spends within 200 tokens here
    assert "Best mix of fixed arms within 200 tokens a query" in decided["sentence"]
    option = ",".join(f"{arm}={share:.9g}" for arm, share in zip(mix["arms"], mix["shares"]))
    assert decided["serve_command"].endswith(f"--mix {option}") and decided["deploy_mix"] == option
    assert f"deploy the mix (`{decided['serve_command']}`)" in decided["sentence"]
    assert decided["sentence"].startswith("Deploy the mix of fixed arms ")  # not a fixed arm, then the mix
    assert "deploy the fixed arm" not in decided["sentence"]
    assert decided["ask_command"] is None and not decided["trains_first"]


def test_a_newer_run_of_another_recipe_changes_nothing(demo_store: Store, tmp_path: Path) -> None:
    """The whole-alphabet run at 0.6 / 0.6 stored again under a new id, newer than every run: the
    decision still rests on the recommended recipe's run."""
    store = copy_store(demo_store, tmp_path / "store")
    runs = store.crossfit_runs("embedded").set_index("run_id")
    settings = json.loads(runs.loc["crossfit-9cfad7fc4574", "settings"])
    rows = store.crossfit_results("crossfit-9cfad7fc4574")
    store.save_crossfit_run("crossfit-newest0000", "embedded", settings, int(settings["folds"]))
    for fold, fold_rows in rows.groupby("fold"):
        store.write_crossfit_fold("crossfit-newest0000", int(fold), fold_rows.drop(columns=["run_id", "fold"]))
    assert store.crossfit_runs("embedded")["run_id"].iloc[0] == "crossfit-newest0000"
    decided = decide(store, tmp_path / "cache", "--lambda-in", "0.6", "--lambda-out", "0.6")
    assert decided["crossfit_run_ids"] == ["crossfit-80ad6021182d"] and decided["policy"] == "forge_lite_cond"


def test_a_guard_that_wins_is_named_with_its_guard_and_served_guarded(demo_store: Store, tmp_path: Path) -> None:
    """Among the fixed arms and the guards of the stored 0.6 / 0.6 run, the cost-conditioned Lite router's
    guard wins: the decision names its router's checkpoint of the same recipe with `--guard 0.2` in the
    serve and ask commands and the manifest's serve settings."""
    settings = json.loads(demo_store.crossfit_runs("embedded").set_index("run_id").loc[
        "crossfit-80ad6021182d", "settings"])
    recipe = run_recipe(settings, embedder_name())
    outcomes = stored_outcomes(demo_store, MeasuredRecipe(recipe, "crossfit-80ad6021182d", "", "", settings))
    guards_and_arms = outcomes[(outcomes["kind"] == "fixed arm") | outcomes["policy"].str.endswith("_guard")]
    decided = decide_from_outcomes(guards_and_arms) | {"retriever": "bm25", "lambda_in": 0.6, "lambda_out": 0.6}
    named = named_decision(demo_store, "embedded", recipe, CostWeights(0.6, 0.6), decided)
    assert named["deploy"] == "forge_lite_cond_guard" and named["variant"] == "lite" and named["conditioned"]
    assert lineage_recipe(demo_store, named["checkpoint_id"]) == recipe.to_dict()
    assert named["serve_command"] == (f"forge serve --host embedded --router {named['checkpoint_id']} "
                                      "--lambda-in 0.6 --lambda-out 0.6 --guard 0.2")
    assert named["ask_command"].endswith(f"--route --router {named['checkpoint_id']} --guard 0.2 \"QUESTION\"")
    manifest = {"host": "embedded", "retriever": "bm25", "arm": None, "checkpoint_id": named["checkpoint_id"],
                "lambda_in": 0.6, "lambda_out": 0.6, "guard": named["guard"]}
    assert serve_settings_of(manifest)["guard"] == 0.2


@pytest.fixture(scope="module")
def counting() -> Iterator[CountingHost]:
    with CountingHost() as server:
        yield server


@pytest.mark.e2e  # a flow that trains and serves: crossfit, a decision, then `forge serve` (about 25 s)
def test_serve_manifest_serves_exactly_it_and_refuses_what_no_longer_holds(
        demo_store: Store, counting: CountingHost, tmp_path: Path) -> None:
    store = copy_store(demo_store, tmp_path / "store")
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=counting.base_url,
                                       max_retries=0, timeout_s=10.0))  # answers in the demo host's place
    path = tmp_path / "manifest.json"
    assert forge(store, tmp_path / "cache", "decide", "--lambda-in", "0.6", "--lambda-out", "0.6",
                 "--manifest", str(path)).returncode == 0
    manifest = read_manifest(path)
    settings = ServeSettings(host="counting", router=manifest["checkpoint_id"], manifest=manifest,
                             weights=WeightsRequest(lambda_in=0.6, lambda_out=0.6), traffic_dir=tmp_path / "traffic")
    with serving_in_thread(store, settings) as url:
        health = httpx.get(f"{url}/health", timeout=10).json()
        reply = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": "forge", "messages": [{"role": "user", "content": "Who wrote Hamlet?"}]})
    assert health["manifest"]["manifest_id"] == manifest_id(manifest)
    assert health["manifest"]["checkpoint_id"] == manifest["checkpoint_id"]
    assert reply.status_code == 200
    assert summarize_traffic(read_traffic(tmp_path / "traffic"))["manifests"] == {manifest_id(manifest): 1}
    assert set(served_manifests(tmp_path / "traffic")) == {manifest_id(manifest)}

    other = forge(store, tmp_path / "cache", "serve", "--manifest", str(path), "--arm", "raw:no_think")
    assert other.returncode == 2 and "drop --arm" in other.stderr
    store.delete_checkpoints([manifest["checkpoint_id"]])
    refused = forge(store, tmp_path / "cache", "serve", "--manifest", str(path))
    assert refused.returncode == 2
    assert f"checkpoint {manifest['checkpoint_id']} is not in this store" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_serve_manifest_of_a_deployed_mix_answers_under_the_arm_each_question_draws(
        demo_store: Store, counting: CountingHost, tmp_path: Path) -> None:
    """At 200 tokens a query the decision deploys the mix of fixed arms (test_a_budget_is_a_constraint):
    its manifest carries `deploy_mix`, and a server built from it answers each `forge` request under
    the arm its question draws from that mix, with /health and the traffic log naming the manifest."""
    store = copy_store(demo_store, tmp_path / "store")
    save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=counting.base_url,
                                       max_retries=0, timeout_s=10.0))  # answers in the demo host's place
    path = tmp_path / "manifest.json"
    decided = forge(store, tmp_path / "cache", "decide", "--budget-tokens", "200", "--lambda-in", "0.1",
                    "--lambda-out", "0.2", "--manifest", str(path))
    assert decided.returncode == 0, decided.stderr[-2000:]
    manifest = read_manifest(path)
    served = serve_settings_of(manifest)
    assert manifest["deploy_mix"] and served["mix"] == manifest["deploy_mix"]
    assert (served["arm"], served["router"]) == (None, None)
    settings = ServeSettings(host="counting", mix=served["mix"], manifest=manifest, traffic_dir=tmp_path / "traffic")
    questions = ["Who wrote Hamlet?", "Where is the Eiffel Tower?", "When did the Berlin Wall fall?",
                 "Who painted the Mona Lisa?", "What is the capital of Australia?", "Who discovered penicillin?"]
    with serving_in_thread(store, settings) as url:
        health = httpx.get(f"{url}/health", timeout=10).json()
        replies = [httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": "forge", "messages": [{"role": "user", "content": question}]}) for question in questions]
    mix = parse_mix(served["mix"], 6)
    expected = [mix.arm_for(question)[0].name for question in questions]
    assert len(set(expected)) == 2  # both of the mix's arms drawn
    assert [(r.json()["forge"]["arm"], r.json()["forge"]["mix"]) for r in replies] == [
        (arm, served["mix"]) for arm in expected]
    assert health["manifest"]["manifest_id"] == manifest_id(manifest)
    records = read_traffic(tmp_path / "traffic").requests
    assert [(r["arm"], r["mix"], r["manifest"]) for r in records] == [
        (arm, served["mix"], manifest_id(manifest)) for arm in expected]
