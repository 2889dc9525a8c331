"""What the pages show of checkpoints and training runs: the checkpoints a page offers (one host,
one evidence, optionally one alphabet, variant and stage), summary rows, lineage diffs, dev metrics
side by side, and training curves in long form (one row per point) ready to plot.

Curves come from a run's log rows (a checkpoint's `training_log`, or a running job's
`job_logs`): Stage 1 logs one row per epoch (train_loss, dev_loss, dev_target_agreement),
Stage 2 one row per `log_every` steps (reward_mean, loss, kl, entropy, beta, dev_utility).

"Dev oracle agreement" has one definition: a checkpoint's metric, the share of dev queries whose
argmax over the whole alphabet is the oracle's arm, for the state that was kept. A Stage-1 epoch
logs a different number, the agreement with the training target's top arm over the arms it trains
(the three NoThink arms by default) at that epoch; logs written before it had its own name call it
`dev_oracle_agreement` and are read as `dev_target_agreement`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from forge_core.errors import InvalidInput
from forge_core.routing.checkpoints import VARIANT_NAMES, checkpoint_name, short_id  # noqa: F401 (re-exported)

# Curve panels: (log key, panel title, series name), in display order.
STAGE1_CURVES: tuple[tuple[str, str, str], ...] = (
    ("train_loss", "KL loss", "train"),
    ("dev_loss", "KL loss", "dev"),
    ("dev_target_agreement", "dev target agreement (trained arms)", "dev"),
)
LEGACY_EPOCH_KEYS = {"dev_oracle_agreement": "dev_target_agreement"}  # Stage-1 logs of earlier versions
STAGE2_CURVES: tuple[tuple[str, str, str], ...] = (
    ("reward_mean", "reward (mean utility)", "reward"),
    ("loss", "loss", "loss"),
    ("kl", "KL to Stage 1", "KL"),
    ("entropy", "entropy", "entropy"),
    ("beta", "beta (KL weight)", "beta"),
    ("dev_utility", "dev utility (the best state is kept)", "dev"),
)
CURVE_COLUMNS = ("x", "x_label", "panel", "series", "value")
DEV_METRICS: tuple[tuple[str, str], ...] = (
    ("dev_utility", "dev utility"),
    ("dev_f1", "dev F1"),
    ("dev_proxy_reward", "dev proxy reward (judge or consensus, not F1)"),
    ("dev_cost_tokens", "dev tokens per query"),
    ("dev_oracle_agreement", "dev oracle agreement"),
    ("dev_queries", "dev queries"),
    ("train_queries", "train queries"),
)
# Lineage entries too long to show as values: shown as a short digest (and their length).
BULKY_LINEAGE_KEYS = frozenset({"feature_names", "standardizer", "normalizer", "host_config_hashes"})


def _loads(value: Any) -> dict[str, Any]:
    """A JSON column value (str) or an already decoded dict."""
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


def select_checkpoints(frame: pd.DataFrame, host: str, retriever_hash: str, n_arms: int | None = None,
                       variant: str | None = None, stage: int | None = None) -> pd.DataFrame:
    """The rows of `frame` (`Store.checkpoints()`) of `host` trained under the evidence `retriever_hash`
    (a lineage's `retriever_hash`; "" for the default BM25), of `n_arms` arms, `variant` and `stage`
    where given."""
    keep = (frame["host"] == host) & frame["lineage"].map(
        lambda lineage: _loads(lineage).get("retriever_hash", "") == retriever_hash).astype(bool)
    for column, wanted in (("n_arms", n_arms), ("variant", variant), ("stage", stage)):
        if wanted is not None:
            keep &= frame[column] == wanted
    return frame[keep]


def checkpoint_table(frame: pd.DataFrame, default_id: str | None = None) -> pd.DataFrame:
    """One row per checkpoint of `Store.checkpoints()` with its lineage in columns: whether it is
    the host's marked default router (`default_id`), stage, algorithm, training reward, parent,
    variant, arms, lambdas, tau, seeds, store snapshot, dev metrics."""
    rows = []
    for row in frame.itertuples():
        lineage, metrics = _loads(row.lineage), _loads(row.metrics)
        config = lineage.get("config", {})
        rows.append({
            "checkpoint": row.checkpoint_id,
            "default": row.checkpoint_id == default_id,
            "created": row.created_at,
            "host": row.host,
            "stage": int(row.stage),
            "algorithm": (config.get("loss_type", "grpo") if int(row.stage) == 2
                          else f"KL ({config.get('target', 'soft')})"),
            "reward": lineage.get("stage2_reward" if int(row.stage) == 2 else "reward", "gold"),
            "parent": row.parent if isinstance(row.parent, str) else "",
            "variant": row.variant,
            "arms": int(row.n_arms),
            "lambda_in": lineage.get("lambda_in"),
            "lambda_out": lineage.get("lambda_out"),
            "tau": lineage.get("tau"),
            "seed": lineage.get("seed"),
            "split seed": lineage.get("split_seed"),
            "store snapshot": lineage.get("store_snapshot", ""),
            **{label: metrics.get(key) for key, label in DEV_METRICS},
        })
    columns = ["checkpoint", "default", "created", "host", "stage", "algorithm", "reward", "parent", "variant", "arms",
               "lambda_in", "lambda_out", "tau", "seed", "split seed", "store snapshot",
               *(label for _, label in DEV_METRICS)]
    return pd.DataFrame(rows, columns=columns)


def checkpoint_label(row: Mapping[str, Any]) -> str:
    """A one-line label of a checkpoint for the Train page's pickers: its name (with its short id),
    arms and dev utility, e.g. "Lite stage 1 · λ 0.1/0.2 · ckpt-1a2b3c · 6 arms · dev U 0.412"."""
    metrics = _loads(row.get("metrics"))
    utility = metrics.get("dev_utility")
    detail = f" · dev U {utility:.3f}" if utility is not None else ""
    return f"{checkpoint_name(row)} · {int(row['n_arms'])} arms{detail}"


def checkpoint_names(frame: pd.DataFrame) -> dict[str, str]:
    """`checkpoint_name` of every checkpoint of a `Store.checkpoints()` frame, by checkpoint id;
    two whose short ids collide are named with their full ids, so every name is unique."""
    names = {row["checkpoint_id"]: checkpoint_name(row) for row in frame.to_dict("records")}
    counts = pd.Series(list(names.values()), dtype=object).value_counts()
    return {checkpoint_id: (name.replace(short_id(checkpoint_id), checkpoint_id) if counts[name] > 1 else name)
            for checkpoint_id, name in names.items()}


def name_with_id(names: Mapping[str, str], checkpoint_id: str) -> str:
    """A checkpoint by its one name (`checkpoint_names`) and its full id, which `forge serve --router`
    and `forge ask --router` take, e.g. "Lite cond. stage 1 · ckpt-962165 (ckpt-9621658c2e77)"; the name
    alone where it holds the full id already (short ids that collide), the id alone for one not in `names`."""
    name = names.get(checkpoint_id)
    if not name:
        return checkpoint_id
    return name if checkpoint_id in name else f"{name} ({checkpoint_id})"


def reproduces_stored_checkpoint(checkpoint_created_at: Any, run_started_at: Any) -> bool:
    """True when a finished run's checkpoint was stored before the run started: checkpoint ids are
    content hashes of lineage and weights, so the run reproduced a stored checkpoint bit for bit
    (the store keeps the first)."""
    return pd.Timestamp(checkpoint_created_at) < pd.Timestamp(run_started_at)


def default_comparison(frame: pd.DataFrame) -> tuple[str, str]:
    """The pair to compare first in a newest-first checkpoint frame: (A, B) = (the newest
    checkpoint's parent when listed, else the second newest; the newest). One checkpoint is
    compared with itself."""
    ids = list(frame["checkpoint_id"])
    if not ids:
        raise InvalidInput("no checkpoints to compare")
    newest = ids[0]
    parent = frame.iloc[0]["parent"]
    if isinstance(parent, str) and parent in ids[1:]:
        return parent, newest
    return (ids[1] if len(ids) > 1 else newest), newest


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    size = f", {len(value)} entries" if isinstance(value, (list, dict)) else ""
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:10]}{size}"


def flatten_lineage(lineage: Mapping[str, Any]) -> dict[str, Any]:
    """Lineage as flat `key -> value` pairs: nested configs become `config.lr`, bulky entries
    (feature names, standardizer, normalizer, host config hashes) a short digest."""
    flat: dict[str, Any] = {}
    for key, value in lineage.items():
        if key in BULKY_LINEAGE_KEYS:
            flat[key] = _digest(value)
        elif isinstance(value, Mapping):
            for inner, inner_value in flatten_lineage(value).items():
                flat[f"{key}.{inner}"] = inner_value
        else:
            flat[key] = value
    return flat


def lineage_diff(a: Mapping[str, Any], b: Mapping[str, Any], only_different: bool = False) -> pd.DataFrame:
    """Two lineages side by side: columns field, a, b, same; fields sorted, differing ones
    first. Values are shown as text (a field missing on one side shows "–")."""
    flat_a, flat_b = flatten_lineage(a), flatten_lineage(b)
    rows = []
    for key in sorted(set(flat_a) | set(flat_b)):
        value_a, value_b = flat_a.get(key, "–"), flat_b.get(key, "–")
        same = key in flat_a and key in flat_b and value_a == value_b
        if only_different and same:
            continue
        rows.append({"field": key, "a": _text(value_a), "b": _text(value_b), "same": same})
    frame = pd.DataFrame(rows, columns=["field", "a", "b", "same"])
    return frame.sort_values(["same", "field"], kind="stable").reset_index(drop=True)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def metrics_comparison(a: Mapping[str, Any], b: Mapping[str, Any]) -> pd.DataFrame:
    """Dev metrics of two checkpoints: columns metric, a, b, b - a."""
    rows = []
    for key, label in DEV_METRICS:
        value_a, value_b = a.get(key), b.get(key)
        delta = value_b - value_a if value_a is not None and value_b is not None else None
        rows.append({"metric": label, "a": value_a, "b": value_b, "b - a": delta})
    return pd.DataFrame(rows, columns=["metric", "a", "b", "b - a"])


def _current(row: Mapping[str, Any]) -> dict[str, Any]:
    """A log row under today's keys (a Stage-1 row of an earlier version renamed)."""
    if "step" in row:
        return dict(row)
    return {LEGACY_EPOCH_KEYS.get(key, key): value for key, value in row.items()}


def log_stage(rows: Sequence[Mapping[str, Any]]) -> int:
    """1 for epoch rows (Stage 1), 2 for step rows (Stage 2)."""
    return 2 if rows and "step" in rows[0] else 1


def training_curves(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A run's log rows as long-form curve points: columns x (epoch or step), x_label, panel,
    series, value. Keys a row lacks are skipped; an empty log gives an empty frame."""
    if not rows:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    stage = log_stage(rows)
    rows = [_current(row) for row in rows]
    x_key = "step" if stage == 2 else "epoch"
    curves = STAGE2_CURVES if stage == 2 else STAGE1_CURVES
    points = [
        {"x": row[x_key], "x_label": x_key, "panel": panel, "series": series, "value": float(row[key])}
        for row in rows for key, panel, series in curves
        if row.get(key) is not None and x_key in row
    ]
    return pd.DataFrame(points, columns=list(CURVE_COLUMNS))


def compare_curves(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """Curves of several runs in one frame with a `run` column (e.g. checkpoint ids), to overlay."""
    frames = [training_curves(rows).assign(run=name) for name, rows in runs.items()]
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return pd.DataFrame(columns=[*CURVE_COLUMNS, "run"])
    return pd.concat(frames, ignore_index=True)


def latest_values(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The last logged value of every curve of a run (e.g. the live metrics of a running job)."""
    if not rows:
        return {}
    curves = STAGE2_CURVES if log_stage(rows) == 2 else STAGE1_CURVES
    last = _current(rows[-1])
    return {key: float(last[key]) for key, _, _ in curves if last.get(key) is not None}
