"""Transfer between hosts: a source host's routers on a target host that knows more, zero-shot
and calibrated on a few target queries (synthetic outcomes on real questions)."""

from __future__ import annotations

import pytest

from forge_core.errors import InvalidInput
from forge_core.evaluation.setup import prepare_evaluation, router_policies
from forge_core.evaluation.transfer import TransferRequest, calibration_rows, run_transfer
from forge_core.policies.context import evaluation_context
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

from support.stores import copy_store

SOURCE, TARGET = "synthetic-host", "knowing-host"


@pytest.mark.slow  # the default suite calibrates on the Transfer page (tests/app/test_transfer_page.py)
def test_calibration_moves_a_transferred_router_towards_the_target(two_host_store: Store, tmp_path) -> None:
    store = copy_store(two_host_store, tmp_path)
    request = TransferRequest(SOURCE, TARGET, weights=CostWeights(0.6, 0.6), calibrate=(100,))
    for settings in request.evaluations():
        prepare_evaluation(store, settings)
    report = run_transfer(store, request)
    policies = report["policies"]
    zero_shot, calibrated = policies["transfer_forge_lite"], policies["transfer_forge_lite_cal100"]
    target_router = policies["target_forge_lite"]
    # the source router sends long questions to Raw, which the target does not need: calibration fixes that
    assert target_router["macro_utility"] > zero_shot["macro_utility"] + 0.05
    assert calibrated["macro_utility"] > zero_shot["macro_utility"] + 0.05
    assert calibrated["ci_utility_vs_target_router"][0] > -0.05
    assert zero_shot["ci_utility_vs_target_router"][1] < 0
    assert policies["transfer_forge_full"]["calls_per_query"] > 4  # its probes are the target's, and charged
    assert report["calibration"]["transfer_forge_lite"][0]["k"] == 100
    assert policies["oracle"]["deployable"] is False and report["queries"] == 60
    # the transferred checkpoints are the source's, trained on source data only
    source_ids = {p.checkpoint_id for p in router_policies(store, request.source_settings())}
    assert all(store.checkpoint(c)[0]["host"] == SOURCE for c in source_ids)
    # the target oracle keeps long questions away from Raw; the zero-shot router does not
    mix = report["arm_mix"]["musique"]
    assert mix["transfer_forge_lite"].get("raw:no_think", 0) > mix["oracle"].get("raw:no_think", 0)
    assert all(abs(sum(shares.values()) - 1) < 1e-3 for shares in mix.values())


@pytest.mark.e2e  # end to end: trains and calibrates routers (about 16 s)
def test_a_calibrated_router_is_stored_with_its_source_and_never_selected(two_host_store: Store, tmp_path) -> None:
    from forge_core.routing.checkpoints import latest_checkpoint, load_checkpoint

    store = copy_store(two_host_store, tmp_path)
    request = TransferRequest(SOURCE, TARGET, weights=CostWeights(0.6, 0.6), calibrate=(25,))
    for settings in request.evaluations():
        prepare_evaluation(store, settings)
    newest_target_lite = latest_checkpoint(store, TARGET, "lite")
    point = run_transfer(store, request)["calibration"]["transfer_forge_lite"][0]
    calibrated = load_checkpoint(store, point["checkpoint_id"])
    source = next(p.checkpoint_id for p in router_policies(store, request.source_settings()) if p.name == "forge_lite")
    assert calibrated.record["host"] == TARGET
    assert (calibrated.lineage["calibrated_from"], calibrated.lineage["calibration_k"]) == (source, 25)
    assert calibrated.lineage["calibration_split"] == "train"
    assert latest_checkpoint(store, TARGET, "lite") == newest_target_lite  # not taken as the target's router
    checkpoints = len(store.checkpoints())
    again = run_transfer(store, request)["calibration"]["transfer_forge_lite"][0]
    assert again["checkpoint_id"] == calibrated.checkpoint_id
    assert len(store.checkpoints()) == checkpoints  # the same calibration stores nothing new


def test_calibration_queries_never_come_from_the_evaluated_split(two_host_store: Store) -> None:
    context = evaluation_context(two_host_store, TARGET, 6, CostWeights(0.1, 0.2))
    for draw in range(3):
        rows = calibration_rows(context, "train", 25, draw)
        assert len(rows) == 25 and set(context.table.splits[rows]) == {"train"}
    assert list(calibration_rows(context, "train", 25, 0)) != list(calibration_rows(context, "train", 25, 1))
    with pytest.raises(InvalidInput, match="never the evaluated one"):
        TransferRequest(SOURCE, TARGET, calibrate=(25,), calibration_split="test")
    with pytest.raises(InvalidInput, match="never the evaluated one"):
        TransferRequest(SOURCE, TARGET, split="dev", calibrate=(25,), calibration_split="dev")
    with pytest.raises(InvalidInput, match="the same"):
        TransferRequest(SOURCE, SOURCE)
    with pytest.raises(InvalidInput, match="at least 1"):
        TransferRequest(SOURCE, TARGET, calibrate=(0,))


@pytest.mark.e2e  # end to end: four `forge eval transfer` processes, each training (about 40 s)
def test_forge_eval_transfer_on_the_command_line(two_host_store: Store, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    store = copy_store(two_host_store, tmp_path)
    env = {**os.environ, "FORGE_STORE": str(store.path)}
    command = [sys.executable, "-m", "forge_core.cli", "eval", "transfer", "--from", SOURCE, "--to", TARGET,
               "--calibrate", "25", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["source_host"], report["target_host"]) == (SOURCE, TARGET)
    assert {"transfer_forge_lite", "transfer_forge_lite_cal25", "target_forge_lite", "always_raw"} <= set(
        report["policies"])
    table = subprocess.run([*command[:-1], "--calibration-split", "dev"], capture_output=True, text=True,
                           env={**env, "COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    assert "arm mix per benchmark" in table.stdout and "calibrated on the target, stored as: K=25 ckpt-" in table.stdout
    missing = subprocess.run([*command[:8], "nowhere-host"], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "no outcomes for host 'nowhere-host'" in missing.stderr
    assert "Traceback" not in missing.stderr
