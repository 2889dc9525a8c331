"""The Pareto page's stated decision and its named points: what to deploy at the chosen weights
(`forge_core.reports.decision`), and every policy's point under a human name, identical points
merged so none hides under another."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from forge_core.reports.decision import crossfit_decision, report_at_weights
from forge_core.reports.tables import merge_identical_points
from forge_core.routing.utility import CostWeights


def named_points(frame: pd.DataFrame, checkpoint_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The frame with identical points merged and a `name` column: checkpoints by their human
    name (the id stays in `policy`, shown in the tooltip), other policies by their own name."""
    names = checkpoint_names or {}
    merged = merge_identical_points(frame)
    merged["name"] = [" = ".join(names.get(p, p) for p in policies) for policies in merged["policies"]]
    return merged


def show_decision(report: dict) -> None:
    """One line saying what to deploy at the run's weights and whether the intervals decide it."""
    decision = crossfit_decision(report)
    detail = (f"λ_in {report['lambda_in']:g} / λ_out {report['lambda_out']:g}, stage {report['stage']}, split seed "
              f"{report['split_seed']}, {report['queries']} queries out of fold. Decidable: the paired 95% interval "
              "of the utility gain over the best fixed arm lies above zero.")
    if decision.decidable:
        st.success(f"**{decision.sentence()}**", icon=":material/rocket_launch:")
    else:
        st.info(f"**{decision.sentence()}**", icon=":material/block:")
    st.caption(detail)


def show_decision_at_weights(reports: list[dict], weights: CostWeights, accounting: str, host: str, split: str) -> None:
    """The decision of the newest stored crossfit run at these weights and accounting, or the
    command that makes one (a decision needs out-of-fold intervals, which the `split` shown lacks)."""
    report = report_at_weights(reports, weights, accounting)
    lambda_in, lambda_out = weights.lambda_in, weights.lambda_out
    if report is None:
        st.info(f"No decision at λ_in {lambda_in:g} / λ_out {lambda_out:g}: deciding needs out-of-fold intervals. "
                f"Run `forge eval crossfit --host {host} --lambda-in {lambda_in:g} --lambda-out "
                f"{lambda_out:g}`{'' if accounting == 'deploy' else ' --accounting answer'} ({_stored(reports)}).",
                icon=":material/help:")
        return
    show_decision(report)
    st.caption(f"The decision is the crossfit run's (`{report['run_id']}`), not the {split} split's below: those "
               "points have no intervals, and their best policy by utility can differ.")


def _stored(reports: list[dict]) -> str:
    """Where the stored runs are, e.g. "stored runs: 0.1/0.2, 0.6/0.6 (deploy)"."""
    if not reports:
        return "no crossfit run is stored for this host yet"
    weights = dict.fromkeys(f"{r['lambda_in']:g}/{r['lambda_out']:g} ({r['accounting']})" for r in reports)
    return "stored runs: " + ", ".join(weights)
