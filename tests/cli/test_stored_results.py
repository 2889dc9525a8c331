"""Every stored result the docs quote is printed again by its command on a fresh `load-demo`
store (the session's `offline_demo`: a command the docs also mark runs once, for both tests): no
training (no table of the store gains a row: checkpoints, crossfit results, Fresh Online
answers, jobs), no host call (counted: the embedded hosts' announced server is a counting test
double, and no model is there to start another), and the numbers are those of the export
(recomputed here from its Parquet files without forge_core's report code)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from forge_core import config
from forge_core.store.exports import table_files

from support.offline_forge import OfflineDemo

DEMO = config.demo_dir()


def stored_runs() -> list:
    """The settings of every crossfit run in the demo export (none when it is absent): the first run of
    each accounting and stage in the default suite, the others in the e2e tier (one command path, 19
    runs at 4-8 s each)."""
    path = DEMO / "crossfit_runs.parquet"
    if not path.exists():
        return []
    runs, seen = [], set()
    for settings in map(json.loads, pd.read_parquet(path)["settings"]):
        kind = (settings["accounting"], settings["stage"])
        runs.append(settings if kind not in seen else pytest.param(settings, marks=pytest.mark.e2e))
        seen.add(kind)
    return runs


def crossfit_command(settings: dict) -> list[str]:
    return ["eval", "crossfit", "--folds", str(settings["folds"]), "--lambda-in", f"{settings['lambda_in']:g}",
            "--lambda-out", f"{settings['lambda_out']:g}", "--stage", str(settings["stage"]),
            "--split-seed", str(settings["split_seed"]), "--accounting", settings["accounting"],
            # Stage 1 trains the whole alphabet by default since #35; the stored runs name the paper's warm start
            "--warm-arms", str(settings["stage1"].get("warm_start_arms", settings["stage1"].get("arms", 6))), "--json"]


def run_offline(demo: OfflineDemo, args: list[str]) -> dict:
    """`forge ARGS` on the fresh demo store (run once a session: tests/test_documented_commands.py reads the
    same runs), its host calls sent to the counting double and no model to start a host from; checks that
    it called no host and trained or computed nothing into the store (every table's row count unchanged);
    returns the printed JSON."""
    run = demo.run(args)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.host_calls == 0, f"forge {' '.join(args)} called a host {run.host_calls} times"
    assert not run.rows_changed, f"forge {' '.join(args)} trained or computed something: {run.rows_changed}"
    return json.loads(run.stdout)


def macro(frame: pd.DataFrame, column: str) -> float:
    return float(frame.groupby("benchmark")[column].mean().mean())


@pytest.mark.parametrize("settings", stored_runs(), ids=lambda s: "{accounting}-stage{stage}-{lambda_in:g}-"
                         "{lambda_out:g}-seed{split_seed}".format(**s))
def test_every_stored_crossfit_run_is_printed_by_its_command(offline_demo: OfflineDemo, settings: dict) -> None:
    report = run_offline(offline_demo, crossfit_command(settings))
    rows = pd.concat(map(pd.read_parquet, table_files(DEMO, "crossfit_results")))  # the gates' rows are a part
    rows = rows[rows["run_id"] == report["run_id"]]
    assert not rows.empty, f"{report['run_id']} is not a run of the export"
    column = f"{settings['accounting']}_utility"
    expected = {policy: macro(frame, column) for policy, frame in rows.groupby("policy")}
    assert set(report["policies"]) == set(expected)
    for policy, utility in expected.items():
        assert report["policies"][policy]["macro_utility"] == pytest.approx(utility, abs=1e-12), policy


def test_the_stored_fresh_run_is_printed_without_a_host(offline_demo: OfflineDemo) -> None:
    """Every policy of the run, the shipped cost-conditioned routers included (their answers are
    stored under their checkpoints), printed with no host call."""
    report = run_offline(offline_demo, ["eval", "fresh", "--split", "test", "--per-benchmark", "5", "--json"])
    rows = pd.read_parquet(DEMO / "fresh_results.parquet")
    rows = rows[rows["run_id"] == report["run_id"]]
    assert set(report["policies"]) == set(rows["policy"])
    for policy, frame in rows.groupby("policy"):
        assert report["policies"][policy]["macro_f1"] == pytest.approx(macro(frame, "f1"), abs=1e-12), policy


@pytest.mark.parametrize("args", [["eval", "--split", "test", "--json"],
                                  ["eval", "--split", "test", "--accounting", "answer", "--json"],
                                  ["store", "summary", "--json"]], ids=" ".join)
def test_the_cached_tables_are_printed_without_training(offline_demo: OfflineDemo, args: list[str]) -> None:
    assert run_offline(offline_demo, args)
