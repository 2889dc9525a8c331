"""The Train page's library pieces: checkpoint rows, lineage diffs, metric comparisons and curves."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from forge_core.reports.checkpoint_views import (
    checkpoint_label,
    checkpoint_table,
    compare_curves,
    default_comparison,
    flatten_lineage,
    latest_values,
    lineage_diff,
    metrics_comparison,
    training_curves,
)

LINEAGE_A = {"lambda_in": 0.1, "lambda_out": 0.2, "tau": 1.0, "seed": 0, "split_seed": 0, "stage": 1,
             "store_snapshot": "abc", "config": {"lr": 2e-4, "max_epochs": 50, "target": "soft"},
             "feature_names": ["e0", "e1", "q"], "parent": None}
LINEAGE_B = {**LINEAGE_A, "lambda_in": 0.3, "stage": 2, "config": {"lr": 1e-5, "loss_type": "rloo"},
             "parent": "ckpt-a"}
METRICS_A = {"dev_utility": 0.5, "dev_f1": 0.6, "dev_cost_tokens": 300.0, "dev_oracle_agreement": 0.7,
             "dev_queries": 60, "train_queries": 120}
METRICS_B = {**METRICS_A, "dev_utility": 0.55, "dev_cost_tokens": 250.0}
STAGE1_LOG = [{"epoch": 1, "train_loss": 0.5, "dev_loss": 0.6, "dev_oracle_agreement": 0.4},
              {"epoch": 2, "train_loss": 0.25, "dev_loss": 0.3, "dev_oracle_agreement": 0.8}]
STAGE2_LOG = [{"step": 10, "reward_mean": 0.4, "loss": 0.1, "kl": 0.01, "entropy": 1.2, "tied_groups": 0.0,
               "beta": 0.05},
              {"step": 20, "reward_mean": 0.5, "loss": 0.2, "kl": 0.02, "entropy": 1.1, "tied_groups": 0.0,
               "beta": 0.075}]


def checkpoints_frame() -> pd.DataFrame:
    """Two checkpoints as `Store.checkpoints()` returns them, newest first."""
    return pd.DataFrame([
        {"checkpoint_id": "ckpt-b", "created_at": pd.Timestamp("2026-01-02"), "stage": 2, "host": "h",
         "variant": "lite", "n_arms": 6, "parent": "ckpt-a", "lineage": json.dumps(LINEAGE_B),
         "metrics": json.dumps(METRICS_B)},
        {"checkpoint_id": "ckpt-a", "created_at": pd.Timestamp("2026-01-01"), "stage": 1, "host": "h",
         "variant": "lite", "n_arms": 6, "parent": None, "lineage": json.dumps(LINEAGE_A),
         "metrics": json.dumps(METRICS_A)},
    ])


def test_checkpoint_table_has_lineage_and_dev_metrics() -> None:
    table = checkpoint_table(checkpoints_frame(), default_id="ckpt-a")
    first, second = table.to_dict("records")
    assert (first["default"], second["default"]) == (False, True)  # the marked default router
    assert (first["checkpoint"], first["stage"], first["algorithm"], first["parent"]) == ("ckpt-b", 2, "rloo", "ckpt-a")
    assert (second["algorithm"], second["parent"], second["lambda_in"], second["tau"]) == ("KL (soft)", "", 0.1, 1.0)
    assert (second["store snapshot"], second["dev utility"], second["dev queries"]) == ("abc", 0.5, 60)
    assert (first["reward"], second["reward"]) == ("gold", "gold")
    assert checkpoint_table(checkpoints_frame().iloc[:0]).empty


def test_checkpoint_table_names_the_training_reward_of_each_stage() -> None:
    frame = checkpoints_frame()
    frame["lineage"] = [json.dumps({**LINEAGE_B, "reward": "judge", "stage2_reward": "consensus"}),
                        json.dumps({**LINEAGE_A, "reward": "judge"})]
    first, second = checkpoint_table(frame).to_dict("records")
    assert (first["reward"], second["reward"]) == ("consensus", "judge")


def test_checkpoint_label() -> None:
    row = checkpoints_frame().to_dict("records")[0]
    assert checkpoint_label(row) == "Lite stage 2 · λ 0.3/0.2 · ckpt-b · 6 arms · dev U 0.550"


def test_default_comparison_is_the_newest_and_its_parent() -> None:
    frame = checkpoints_frame()
    assert default_comparison(frame) == ("ckpt-a", "ckpt-b")
    assert default_comparison(frame.iloc[1:]) == ("ckpt-a", "ckpt-a")
    no_parent = frame.assign(parent=[None, None])
    assert default_comparison(no_parent) == ("ckpt-a", "ckpt-b")
    with pytest.raises(ValueError):
        default_comparison(frame.iloc[:0])


def test_flatten_lineage_nests_configs_and_digests_bulky_entries() -> None:
    flat = flatten_lineage(LINEAGE_A)
    assert flat["config.lr"] == 2e-4 and flat["config.target"] == "soft" and "config" not in flat
    assert flat["feature_names"].startswith("sha256:") and flat["feature_names"].endswith(", 3 entries")


def test_lineage_diff_lists_differences_first() -> None:
    diff = lineage_diff(LINEAGE_A, LINEAGE_B)
    different = diff[~diff["same"]]
    assert list(different["field"]) == ["config.loss_type", "config.lr", "config.max_epochs", "config.target",
                                        "lambda_in", "parent", "stage"]
    assert list(diff["field"][: len(different)]) == list(different["field"])
    row = diff.set_index("field").loc["lambda_in"]
    assert (row["a"], row["b"]) == ("0.1", "0.3")
    row = diff.set_index("field").loc["config.loss_type"]
    assert (row["a"], row["b"]) == ("–", "rloo")
    assert diff.set_index("field").loc["feature_names", "same"]
    only = lineage_diff(LINEAGE_A, LINEAGE_B, only_different=True)
    assert list(only["field"]) == list(different["field"])


def test_metrics_comparison() -> None:
    table = metrics_comparison(METRICS_A, METRICS_B).set_index("metric")
    assert table.loc["dev utility", "b - a"] == pytest.approx(0.05)
    assert table.loc["dev tokens per query", "b - a"] == -50.0
    assert metrics_comparison(METRICS_A, {}).set_index("metric").loc["dev F1", "b - a"] is None


def test_stage1_curves() -> None:
    curves = training_curves(STAGE1_LOG)
    assert len(curves) == 6 and set(curves["x_label"]) == {"epoch"}
    loss = curves[curves["panel"] == "KL loss"]
    assert list(zip(loss["x"], loss["series"], loss["value"])) == [
        (1, "train", 0.5), (1, "dev", 0.6), (2, "train", 0.25), (2, "dev", 0.3)]
    agreement = curves[curves["panel"] == "dev target agreement (trained arms)"]
    assert list(agreement["value"]) == [0.4, 0.8]


def test_stage2_curves_and_latest_values() -> None:
    curves = training_curves(STAGE2_LOG)
    assert set(curves["panel"]) == {"reward (mean utility)", "loss", "KL to Stage 1", "entropy", "beta (KL weight)"}
    assert len(curves) == 10 and set(curves["x"]) == {10, 20}
    assert list(curves[curves["series"] == "beta"]["value"]) == [0.05, 0.075]
    assert latest_values(STAGE2_LOG) == {"reward_mean": 0.5, "loss": 0.2, "kl": 0.02, "entropy": 1.1, "beta": 0.075}
    # a log of an earlier version: its epoch agreement is the target agreement, not the oracle agreement
    assert latest_values(STAGE1_LOG) == {"train_loss": 0.25, "dev_loss": 0.3, "dev_target_agreement": 0.8}
    assert training_curves([]).empty and latest_values([]) == {}
    with_dev = training_curves([{**row, "dev_utility": 0.3} for row in STAGE2_LOG])
    assert list(with_dev[with_dev["panel"] == "dev utility (the best state is kept)"]["value"]) == [0.3, 0.3]


def test_compare_curves_overlays_runs() -> None:
    curves = compare_curves({"A": STAGE1_LOG, "B": STAGE2_LOG, "C": []})
    assert curves.groupby("run").size().to_dict() == {"A": 6, "B": 10}
    assert compare_curves({"A": []}).empty


def test_checkpoints_have_unique_human_names() -> None:
    from forge_core.reports.checkpoint_views import checkpoint_name, checkpoint_names

    frame = pd.DataFrame({
        "checkpoint_id": ["ckpt-aaaaaa111111", "ckpt-bbbbbb222222", "ckpt-cccccc333333"],
        "created_at": pd.to_datetime(["2026-11-24 13:35:10", "2026-11-24 13:35:50", "2026-11-21 16:15:31"]),
        "stage": [2, 2, 1], "variant": ["lite", "lite", "full"],
        "lineage": ['{"conditioning": {"low": 0.02, "high": 3.0}}', "{}", "{}"]})
    assert checkpoint_name(frame.iloc[0]) == "Lite cond. stage 2 · ckpt-aaaaaa"
    frame.loc[1, "lineage"] = '{"lambda_in": 0.1, "lambda_out": 0.2}'
    assert checkpoint_names(frame) == {"ckpt-aaaaaa111111": "Lite cond. stage 2 · ckpt-aaaaaa",
                                       "ckpt-bbbbbb222222": "Lite stage 2 · λ 0.1/0.2 · ckpt-bbbbbb",
                                       "ckpt-cccccc333333": "Full stage 1 · ckpt-cccccc"}
    twins = frame.assign(lineage="{}", checkpoint_id=["ckpt-aaaaaa111111", "ckpt-aaaaaa222222", "ckpt-c"])
    assert checkpoint_names(twins)["ckpt-aaaaaa111111"] == "Lite stage 2 · ckpt-aaaaaa111111"


def test_select_checkpoints_keeps_one_host_one_evidence_and_the_asked_alphabet_variant_and_stage() -> None:
    from forge_core.reports.checkpoint_views import select_checkpoints

    dense = {**LINEAGE_A, "retriever_hash": "dense-1"}
    frame = pd.concat([checkpoints_frame(), checkpoints_frame().assign(
        checkpoint_id=["ckpt-d", "ckpt-e"], host=["h", "other"], n_arms=[12, 6],
        lineage=[json.dumps(dense), json.dumps(LINEAGE_A)])], ignore_index=True)
    ids = lambda rows: list(rows["checkpoint_id"])  # noqa: E731
    assert ids(select_checkpoints(frame, "h", "")) == ["ckpt-b", "ckpt-a"]  # no retriever_hash: the default BM25
    assert ids(select_checkpoints(frame, "h", "dense-1")) == ["ckpt-d"]
    assert ids(select_checkpoints(frame, "other", "")) == ["ckpt-e"]
    assert ids(select_checkpoints(frame, "h", "", stage=1)) == ["ckpt-a"]
    assert ids(select_checkpoints(frame, "h", "dense-1", n_arms=6)) == []
    assert ids(select_checkpoints(frame, "h", "", n_arms=6, variant="full")) == []
    assert ids(select_checkpoints(frame.iloc[:0], "h", "")) == []
