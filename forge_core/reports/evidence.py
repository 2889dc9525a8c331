"""The Overview's view of the evidence: stored `forge evidence compare` rows as one table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

EVIDENCE_COLUMNS = ("benchmark", "retriever", "kind", "k", "queries", "gold recall@k", "minus the run's first",
                    "Summary tokens in", "Raw tokens in", "latency p50 / p95 ms", "measured")


def measured_only(results: pd.DataFrame, offered: Sequence[str]) -> dict[str, str]:
    """The retrievers of stored `forge evidence compare` rows (`Store.evidence_results`) that a page
    cannot offer, name -> kind: measured, but not among `offered` (the configured ones), so with no
    outcomes to read."""
    if not len(results):
        return {}
    kinds = {name: result["kind"] for name, result in zip(results["retriever"], results["result"])
             if name not in offered}
    return dict(sorted(kinds.items()))


def measured_only_sentence(kinds: Mapping[str, str]) -> str:
    """Why the retrievers `measured_only` found are not offered, and the commands that would make them so."""
    if not kinds:
        return ""
    name, kind = next(iter(kinds.items()))
    return (f"Not offered: {', '.join(kinds)}, measured by `forge evidence compare` (the Overview's evidence tables) "
            f"but not configured in this store, so no outcomes under them: `forge retriever add {name} --kind {kind}` "
            f"then `forge enumerate --retriever {name}` make them.")


def evidence_frame(results: pd.DataFrame) -> pd.DataFrame:
    """One row per stored (benchmark, retriever configuration, k) measurement
    (`Store.evidence_results`): gold recall at k and Summary's and Raw's input tokens as means with
    their 95% intervals, the paired interval against the first retriever of the same run, and
    retrieval latency p50/p95."""
    rows = []
    for stored in results.itertuples(index=False):
        result = stored.result
        versus = result.get("recall_vs_first_ci95")
        rows.append({
            "benchmark": stored.benchmark, "retriever": stored.retriever, "kind": result["kind"], "k": int(stored.k),
            "queries": int(stored.queries), "gold recall@k": _interval(result["recall_at_k"], 3),
            "minus the run's first": f"[{versus[0]:+.3f}, {versus[1]:+.3f}]" if versus else "",
            "Summary tokens in": _interval(result["summary_tokens_in"], 0),
            "Raw tokens in": _interval(result["raw_tokens_in"], 0),
            "latency p50 / p95 ms": f"{result['latency_ms']['p50']:.1f} / {result['latency_ms']['p95']:.1f}",
            "measured": stored.measured_at.strftime("%Y-%m-%d %H:%M")})
    return pd.DataFrame(rows, columns=list(EVIDENCE_COLUMNS))


def _interval(value: dict, digits: int) -> str:
    low, high = value["ci95"]
    return f"{value['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
