"""One scoring path: the Pareto page's points are what `forge eval cached --json` reports."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from forge_core import cli
from forge_core.evaluation.cached import CachedRequest
from forge_core.evaluation.setup import EvaluationSettings, router_policies
from forge_core.policies.context import evaluation_context
from forge_core.policies.registry import TrainedRouter, variants
from forge_core.reports.tables import pareto_report
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.request import TrainRequest
from forge_core.training.settings import Stage1Config
from forge_core.training.trainer import train_router

from support.stores import copy_store

HOST = "synthetic-host"
COMPARED = ("cost_k", "macro_f1", "macro_utility", "gold_recall", "support_rate")


def test_the_pareto_pages_points_equal_forge_eval_cached_json(outcome_store: Store, tmp_path, monkeypatch) -> None:
    store = copy_store(outcome_store, tmp_path)
    for variant in variants(TrainedRouter).values():  # the routers `forge eval` would train, in fewer epochs
        train_router(store, TrainRequest(host=HOST, variant=variant, lambda_in=0.3, stage1=Stage1Config(max_epochs=3)))
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    result = CliRunner().invoke(cli.app, ["eval", "cached", "--host", HOST, "--lambda-in", "0.3", "--json"])
    assert result.exit_code == 0, result.output
    reported = json.loads(result.output)["policies"]

    settings = EvaluationSettings(HOST, "test", 6, CostWeights(0.3, 0.2))
    routers = {policy.checkpoint_id: policy.name for policy in router_policies(store, settings)}
    request = CachedRequest(settings, checkpoints=tuple(routers))  # as pages/pareto.py builds it
    base = evaluation_context(store, HOST, 6, CostWeights(), accounting="deploy")  # as app/data.py loads it
    frame = pareto_report(store, request, False, base)
    page = {routers.get(row["policy"], row["policy"]): row for row in frame.to_dict("records")}

    assert set(routers.values()) <= set(page) and len(page) == len(frame) >= len(routers) + 10
    for name, point in page.items():
        for metric in COMPARED:
            assert _value(point[metric]) == pytest.approx(_value(reported[name][metric]), abs=1e-12, nan_ok=True), \
                (name, metric)


def _value(number: float | None) -> float:
    """None (no gold evidence or no verdicts) as NaN, the frame's way of writing it."""
    return float("nan") if number is None else float(number)
