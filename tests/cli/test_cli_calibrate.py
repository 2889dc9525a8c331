"""`forge calibrate` and `forge train --conditioned` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from forge_core import cli
from forge_core.errors import InvalidInput
from forge_core.store import Store


@pytest.mark.parametrize(("arguments", "message"), [
    (["calibrate"], "give one target"),
    (["calibrate", "--budget-tokens", "200", "--min-f1", "0.3"], "give one target"),
    (["calibrate", "--min-f1", "35"], "a fraction in [0, 1]"),
    (["calibrate", "--budget-tokens", "200", "--variant", "bge"], "calibrate a lite or full router"),
])
def test_a_wrong_target_is_one_message(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(cli.app, arguments)
    assert isinstance(result.exception, InvalidInput) and message in str(result.exception)


def test_calibrate_reports_target_beside_realized_as_json(outcome_store: Store, tmp_path, monkeypatch) -> None:
    from support.stores import copy_store

    store = copy_store(outcome_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    result = CliRunner().invoke(cli.app, ["calibrate", "--host", "synthetic-host", "--budget-tokens", "400",
                                          "--folds", "2", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["budget_tokens"] == 400 and report["ratio"] == 2.0 and len(report["folds"]) == 2
    assert report["lambda_out"] == pytest.approx(2 * report["lambda_in"])
    low, high = report["realized_tokens_ci"]
    assert low <= report["realized_tokens"] <= high and report["target_met"] == (report["realized_tokens"] <= 400)
    # the reference at the budget: the best mix of fixed arms within it, the router's F1 gain over it, paired
    mix = report["mix"]
    assert mix["tokens"] <= 400 and sum(mix["shares"]) == pytest.approx(1.0)
    gain = mix["gains"]["forge_lite_cond"]
    assert gain["difference"] == pytest.approx(report["realized_f1"] - mix["f1"])
    assert gain["ci"][0] <= gain["difference"] <= gain["ci"][1]


def test_the_cli_exits_2_with_one_line_for_a_missing_target() -> None:
    done = subprocess.run([sys.executable, "-m", "forge_core.cli", "calibrate"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    assert "give one target" in done.stdout + done.stderr
