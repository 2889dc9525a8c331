"""The peers' units: each policy's out-of-fold decisions in the units the routing papers report,
so FORGE's numbers can be set beside theirs.

- **Answers with retrieved evidence** against always-retrieve (TARG's unit, arXiv 2511.09803): the
  share of queries whose answering call carried retrieved passages (a Summary or Raw arm), against
  1 for a policy that always retrieves. The answering call only: a Full router's probes and
  Self-Routing's first call use the Direct prompt (no evidence); a cascade's earlier Summary call is
  not counted.
- **Thinking tokens** against always-cot (DART's and AdaptR1's unit): the output tokens of the
  answering call where its arm thinks (cot or a reasoning budget), 0 elsewhere, against the cot arm
  of the same support on every query (the policy's own evidence, always thinking).
- **Tokens at Always-Raw's F1** (RAG-on-a-Diet's unit): the policy's tokens a query (the run's
  accounting) against Always-Raw's, with whether its F1 is decidably below, above or not decidably
  different from Always-Raw's (only the last two spend those tokens at Always-Raw's F1).

Every difference is macro over benchmarks with the paired bootstrap 95% interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forge_core.evaluation.oracle_measures import is_thinking_arm
from forge_core.statistics import Interval, macro, paired_bootstrap_ci

EVIDENCE_SUPPORTS = ("summary", "raw")  # supports whose prompt carries retrieved passages
ALWAYS_COT = "cot"  # the thinking mode of the always-think reference
KEYS = ["benchmark", "example_id"]


def output_tokens(arm_outcomes: pd.DataFrame) -> pd.DataFrame:
    """The stored arm outcomes' output tokens by (benchmark, example_id, arm) (`Store.arm_outcomes`)."""
    return arm_outcomes[[*KEYS, "arm", "tokens_out"]].drop_duplicates([*KEYS, "arm"])


def peer_units(frame: pd.DataFrame, raw: pd.DataFrame, tokens_out: pd.DataFrame, tokens: str, benchmarks: np.ndarray,
               f1_vs_raw: list[float]) -> dict:
    """One policy's units (`frame`: its out-of-fold rows; `raw`: Always-Raw's on the same rows in
    the same order; `tokens_out`: `output_tokens`; `tokens`: the run's tokens column; `f1_vs_raw`:
    the interval of its F1 minus Always-Raw's)."""
    supports = frame["arm"].str.split(":").str[0]
    evidence = supports.isin(EVIDENCE_SUPPORTS).to_numpy(dtype=np.float64)
    own = _looked_up(frame[KEYS].assign(arm=frame["arm"].to_numpy()), tokens_out)
    always_cot = _looked_up(frame[KEYS].assign(arm=(supports + ":" + ALWAYS_COT).to_numpy()), tokens_out)
    thinking = np.where([is_thinking_arm(arm) for arm in frame["arm"]], own, 0.0)
    spent, raw_spent = frame[tokens].to_numpy(dtype=np.float64), raw[tokens].to_numpy(dtype=np.float64)
    return {"evidence_answers": {"share": macro(evidence, benchmarks), "always_retrieve": 1.0,
                                 "ci": list(paired_bootstrap_ci(evidence, np.zeros_like(evidence), benchmarks))},
            "thinking_tokens": _against(thinking, always_cot, benchmarks, "always_cot"),
            "tokens_vs_always_raw": _against(spent, raw_spent, benchmarks, "always_raw")
            | {"f1_vs_always_raw": Interval.of(f1_vs_raw).verdict}}


def _against(values: np.ndarray, reference: np.ndarray, benchmarks: np.ndarray, name: str) -> dict:
    """Macro `values`, the reference's, their difference with its paired interval, and their ratio."""
    mean, other = macro(values, benchmarks), macro(reference, benchmarks)
    return {"tokens": mean, name: other, "difference": mean - other,
            "ci": list(paired_bootstrap_ci(values, reference, benchmarks)),
            "ratio": mean / other if other > 0 else None}


def _looked_up(keys: pd.DataFrame, tokens_out: pd.DataFrame) -> np.ndarray:
    """Each (benchmark, example_id, arm) row's output tokens, in the rows' order (0 where none is stored)."""
    found = keys.merge(tokens_out, on=[*KEYS, "arm"], how="left", validate="many_to_one")
    return found["tokens_out"].fillna(0).to_numpy(dtype=np.float64)


PEER_HEADERS = ("policy", "answers with evidence (always-retrieve 100%)", "thinking tokens vs always-cot",
                "tokens vs Always-Raw", "F1 vs Always-Raw")


def peer_rows(report: dict) -> list[tuple[str, ...]]:
    """A crossfit report's peers' units as text cells, one row per policy but the oracle, highest
    utility first (`forge eval crossfit` prints them under `PEER_HEADERS`)."""
    rows = []
    for name, row in sorted(report["policies"].items(), key=lambda item: -item[1]["macro_utility"]):
        units = row.get("peer_units")
        if units is None or row["kind"] == "oracle":
            continue
        evidence, thinking, spent = units["evidence_answers"], units["thinking_tokens"], units["tokens_vs_always_raw"]
        rows.append((name, f"{evidence['share']:.1%} [{evidence['ci'][0]:.1%}, {evidence['ci'][1]:.1%}]",
                     _versus(thinking, "always_cot"), _versus(spent, "always_raw"), spent["f1_vs_always_raw"]))
    return rows


def _versus(unit: dict, reference: str) -> str:
    """"120 vs 450: -330 [-350, -310]": tokens against the reference's, the difference and its interval."""
    low, high = unit["ci"]
    return f"{unit['tokens']:,.0f} vs {unit[reference]:,.0f}: {unit['difference']:+,.0f} [{low:+,.0f}, {high:+,.0f}]"
