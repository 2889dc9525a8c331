"""The traffic log of `forge serve` as the Traffic page and `forge traffic` show it (the log itself,
its records and how they are read: `forge_core.traffic_log`): requests, arm mix, tokens with
intervals, budgets, clients, the shadow samples, the slowest and costliest requests.

Means come with normal 95% intervals (mean +- 1.96 s / sqrt(n)); the saving against Always-Raw
is over the requests of the shadow Always-Raw sample (`--shadow-raw`), the candidate's figures
over those of the shadow candidate (`--candidate`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from forge_core.errors import InvalidInput
from forge_core.statistics import Z_95, mean_interval
from forge_core.traffic_log import TrafficRecords

TOP = 5  # slowest and costliest requests listed
ROLLING = 200  # requests in the page's rolling mean (the controllers' default window)
BUDGET_TOLERANCE = 0.05  # the controllers hold the realized mean within 5% of the target
DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
BUCKETS_S = (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 21600, 86400)  # widths of the requests-over-time bars


def parse_since(since: str | None, now: float | None = None) -> float | None:
    """`--since`: a duration back from now (`90s`, `15m`, `2h`, `1d`) or an ISO time (UTC unless
    it says otherwise), as a Unix time; a one-line error for anything else."""
    if since is None:
        return None
    found = DURATION.match(since.strip())
    if found:
        return (time.time() if now is None else now) - float(found.group(1)) * SECONDS[found.group(2)]
    try:
        moment = datetime.fromisoformat(since.strip())
    except ValueError:
        raise InvalidInput(f"--since takes a duration (90s, 15m, 2h, 1d) or an ISO time, not '{since}'") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _interval(values: list[float]) -> dict[str, Any]:
    mean, (low, high) = mean_interval(values)
    return {"n": len(values), "mean": _finite(mean), "ci95": [_finite(low), _finite(high)]}


def _finite(value: float) -> float | None:
    return None if value != value else round(value, 3)  # NaN -> None (JSON-safe)


def interval_text(stat: dict) -> str:
    """'mean [low, high]' (its 95% interval) of a `summarize_traffic` statistic: the mean alone
    below two values, "-" without one."""
    if stat["mean"] is None:
        return "-"
    low, high = stat["ci95"]
    return f"{stat['mean']:,.1f}" + ("" if low is None else f" [{low:,.1f}, {high:,.1f}]")


def summarize_traffic(records: TrafficRecords) -> dict[str, Any]:
    """The summary `forge traffic --json` prints."""
    requests = records.requests
    answered = [r for r in requests if r.get("status") == 200 and r.get("endpoint") == "chat"]
    summary: dict[str, Any] = {
        "requests": len(requests), "answered": len(answered),
        "by_status": dict(sorted(Counter(str(r.get("status")) for r in requests).items())),
        "by_endpoint": dict(Counter(r.get("endpoint") for r in requests)),
        "first": requests[0]["time"] if requests else None, "last": requests[-1]["time"] if requests else None,
        "arms": dict(Counter(r["arm"] for r in answered).most_common()),
        "tokens": _interval([r["tokens"] for r in answered]),
        "host_calls": sum(r.get("host_calls", 0) for r in answered),
        "latency_ms": _interval([r["latency_ms"] for r in answered]),
        "budgets": _groups(answered, "budget"), "clients": _groups(requests, "client"),
        "manifests": dict(Counter(r["manifest"] for r in requests if r.get("manifest"))),
        "shadow_raw": _shadow_raw(records, answered), "candidate": _candidate(records, answered),
        "slowest": _top(answered, "latency_ms"), "costliest": _top(answered, "tokens"),
        "unreadable_lines": records.skipped_lines,
    }
    return summary


def _groups(requests: list[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in requests:
        if record.get(key) is not None:
            groups.setdefault(record[key], []).append(record)
    result = {}
    for name, members in sorted(groups.items()):
        answered = [r for r in members if r.get("status") == 200 and r.get("endpoint") == "chat"]
        last = answered[-1] if answered else {}
        result[name] = {"requests": len(members), "tokens": _interval([r["tokens"] for r in answered]),
                        "lambda_in": last.get("lambda_in"), "lambda_out": last.get("lambda_out")}
        if key == "budget":
            window = [r["tokens"] for r in answered[-ROLLING:]]
            result[name] |= {"target": last.get("budget_target"), "window": _interval(window),
                             "at_bound": last.get("budget_bound"),
                             "out_of_reach": out_of_reach(last.get("budget_bound"), float(np.mean(window)),
                                                          last.get("budget_target"))}
    return result


def out_of_reach(bound: str | None, realized: float, target: float | None) -> bool:
    """True when a budget's controller sits at an end of the router's trained weights with the
    realized mean still beyond `BUDGET_TOLERANCE` of the target on the far side: at the lowest
    weights spending less (the router never spends that much), at the highest spending more."""
    if target is None or bound is None:
        return False
    if bound == "lowest":
        return realized < target * (1 - BUDGET_TOLERANCE)
    return realized > target * (1 + BUDGET_TOLERANCE)


def _shadow_raw(records: TrafficRecords, answered: list[dict[str, Any]]) -> dict[str, Any]:
    savings = [s["saving"] for r in answered for s in records.shadows.get(r["id"], []) if s["shadow"] == "raw"]
    raw = [s["raw_tokens"] for r in answered for s in records.shadows.get(r["id"], []) if s["shadow"] == "raw"]
    return {"saving_tokens": _interval(savings), "raw_tokens": _interval(raw)}


def _candidate(records: TrafficRecords, answered: list[dict[str, Any]]) -> dict[str, Any]:
    shadows = [s for r in answered for s in records.shadows.get(r["id"], []) if s["shadow"] == "candidate"]
    routed = [s for s in shadows if "agree" in s]
    answered_by_candidate = [s for s in shadows if s.get("candidate_tokens") is not None]
    difference = [s["candidate_tokens"] - s["served_tokens"] for s in answered_by_candidate]
    rated = [s for s in routed if s["agree"] or (s.get("candidate_rating") is not None
                                                 and s.get("served_rating") is not None)]
    quality = [0.0 if s["agree"] else s["candidate_rating"] - s["served_rating"] for s in rated]
    return {"shadowed": len(shadows), "routed": len(routed),
            "agreement": round(sum(s["agree"] for s in routed) / len(routed), 4) if routed else None,
            "calls": sum(s.get("calls", 0) for s in shadows),
            "tokens_spent": sum(s.get("tokens_spent", 0) for s in shadows),
            "capped": sum(s.get("status") == "capped" for s in shadows),
            "token_difference": _interval(difference),
            "quality_difference": _interval(quality) if any(s.get("candidate_rating") is not None for s in rated)
            else _interval([]),
            "arms": dict(Counter(s["candidate_arm"] for s in routed).most_common())}


def _top(answered: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    ranked = sorted(answered, key=lambda r: r.get(key, 0), reverse=True)[:TOP]
    return [{"id": r["id"], "time": r["time"], "client": r["client"], "arm": r["arm"], "tokens": r["tokens"],
             "latency_ms": r["latency_ms"], "question": r.get("question", "")} for r in ranked]


def requests_frame(records: TrafficRecords) -> pd.DataFrame:
    """One row per answered chat request, oldest first: time (UTC), client, budget, its target, the
    weights in force, arm, margin, tokens, host calls, latency, and the rolling mean tokens over the
    last `ROLLING` requests of its budget (or of all unbudgeted ones) with a normal 95% interval."""
    rows = [r for r in records.requests if r.get("status") == 200 and r.get("endpoint") == "chat"]
    columns = ["id", "time", "client", "budget", "budget_target", "budget_bound", "lambda_in", "lambda_out", "arm",
               "margin", "tokens", "host_calls", "latency_ms"]
    frame = pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=columns)
    frame["time"] = pd.to_datetime(frame["time"], unit="s", utc=True)
    frame["budget"] = frame["budget"].fillna("(none)")
    frame["tokens"] = frame["tokens"].astype(float)
    grouped = frame.groupby("budget")["tokens"]
    mean = grouped.transform(lambda t: t.rolling(ROLLING, min_periods=1).mean())
    std = grouped.transform(lambda t: t.rolling(ROLLING, min_periods=2).std())
    count = grouped.transform(lambda t: t.rolling(ROLLING, min_periods=1).count())
    half = Z_95 * std / np.sqrt(count)
    frame["rolling_tokens"], frame["rolling_low"], frame["rolling_high"] = mean, mean - half, mean + half
    return frame


def requests_over_time(frame: pd.DataFrame, bars: int = 40) -> pd.Series:
    """Answered requests per time bucket, the bucket a round width (1 s to 1 day) giving at most
    about `bars` bars over the frame's span; named after its width ("requests per 10s")."""
    if frame.empty:
        return pd.Series(dtype=float)
    span_s = (frame["time"].max() - frame["time"].min()).total_seconds()
    width = next((w for w in BUCKETS_S if span_s / w <= bars), BUCKETS_S[-1])
    label = f"{width}s" if width < 60 else f"{width // 60}min" if width < 3600 else f"{width // 3600}h"
    counts = frame.set_index("time").resample(f"{width}s")["id"].count()
    return counts.rename(f"requests per {label}")


def arm_mix_over_time(frame: pd.DataFrame, buckets: int = 20) -> pd.DataFrame:
    """Share of each arm in `buckets` equal runs of consecutive requests (index: the run's last time)."""
    if frame.empty:
        return pd.DataFrame()
    run = np.arange(len(frame)) * buckets // len(frame)
    counts = pd.crosstab(run, frame["arm"].to_numpy(), normalize="index")
    counts.index = frame.groupby(run)["time"].max().to_numpy()
    return counts


def shadow_frame(records: TrafficRecords) -> pd.DataFrame:
    """One row per shadow record: the request id, what was shadowed (raw or candidate) and its fields."""
    rows = [s for group in records.shadows.values() for s in group]
    return pd.DataFrame(rows)


def request_record(records: TrafficRecords, request_id: str) -> dict[str, Any]:
    """A request's record with its shadow records (the page's "open")."""
    found = next((r for r in records.requests if r["id"] == request_id), None)
    if found is None:
        raise InvalidInput(f"no request '{request_id}' in the traffic log")
    return found | {"shadows": records.shadows.get(request_id, [])}
