"""The Pareto page's "Calibrate to a budget" control: a token budget or an F1 floor in, the weights
at which the cost-conditioned router meets it out (the sliders move there), with the tokens and F1
they realize out of fold beside the target (`forge calibrate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from app import ui, weights
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

if TYPE_CHECKING:  # calibration trains routers (torch): imported when the button is pressed
    from forge_core.evaluation.calibration import CalibrationRequest, CalibrationResult

RESULT_KEY = "calibration_result"  # the last CalibrationResult of the session
TARGETS = ("At most T tokens a query", "At least F macro F1")


def calibration_panel(store: Store, host: str, n_arms: int, accounting: str) -> None:
    """The control and the last result, drawn only while the section is open (it stays open after a
    calibration, which moves the weight sliders)."""
    with (panel := st.expander("Calibrate to a budget", icon=":material/tune:", key="pareto-calibrate",
                               on_change="rerun")):
        if panel.open:
            _controls(store, host, n_arms, accounting)


def _controls(store: Store, host: str, n_arms: int, accounting: str) -> None:
    st.caption("FORGE trains the cost-conditioned router on each crossfit fold's training part, finds on its "
               "inner dev part the weights along λ_out = ratio × λ_in that meet the target, and decides the "
               "held-out fold there: the realized tokens and F1 below are out of fold (about a minute on the "
               "demo store). The sliders then move to the folds' median weights.")
    target_column, value_column, ratio_column, variant_column = st.columns([3, 2, 2, 2])
    target = target_column.radio("Target", TARGETS, key="calibration_target")
    if target == TARGETS[0]:
        value = value_column.number_input("T (tokens a query)", min_value=1.0, value=200.0, step=10.0,
                                          key="calibration_tokens")
    else:
        value = value_column.number_input("F (macro F1)", min_value=0.0, max_value=1.0, value=0.35, step=0.01,
                                          key="calibration_f1")
    ratio = ratio_column.number_input("Ratio λ_out / λ_in", min_value=0.01, value=2.0, step=0.5,
                                      key="calibration_ratio", help="The paper's ratio is 2 (0.1 / 0.2).")
    variant = variant_column.segmented_control("Router", ["lite", "full"], default="lite",
                                               key="calibration_variant") or "lite"
    if st.button("Calibrate", icon=":material/tune:", key="calibrate"):
        from forge_core.evaluation.calibration import CalibrationRequest

        with ui.user_errors(stop=False):
            request = CalibrationRequest(
                budget_tokens=value if target == TARGETS[0] else None,
                min_f1=value if target == TARGETS[1] else None, ratio=ratio, host=host, variant=variant,
                n_arms=n_arms, accounting=accounting)
            st.session_state[RESULT_KEY] = _run(store, request)
            calibrated = st.session_state[RESULT_KEY]
            weights.set_weights(calibrated.weights)
            st.rerun()
    result = st.session_state.get(RESULT_KEY)
    if result is not None:
        _show(result)


def budget_for(cost_weights: CostWeights) -> float | None:
    """The token budget these weights were calibrated to in this session (the sliders still where
    the last budget calibration moved them), else None."""
    result = st.session_state.get(RESULT_KEY)
    if result is None or result.request.budget_tokens is None:
        return None
    calibrated = result.weights
    moved_to = (round(calibrated.lambda_in, 2), round(calibrated.lambda_out, 2))
    return result.request.budget_tokens if moved_to == (cost_weights.lambda_in, cost_weights.lambda_out) else None


def _run(store: Store, request: CalibrationRequest) -> CalibrationResult:
    from forge_core.evaluation.calibration import run_calibration

    with st.status(f"Calibrating to {request.target} on {request.folds} folds…", expanded=True) as status:
        progress = st.progress(0.0, text="fold 1")
        result = run_calibration(store, request, on_fold=lambda done, total: progress.progress(
            done / total, text=f"{done} of {total} folds"))
        status.update(label="Calibrated", state="complete", expanded=False)
    return result


def _show(result: CalibrationResult) -> None:
    report = result.to_json()
    tokens_low, tokens_high = report["realized_tokens_ci"]
    f1_low, f1_high = report["realized_f1_ci"]
    verdict = "met" if result.target_met else "not met"
    st.markdown(f"**Target: {result.request.target}** ({result.request.variant} conditioned router, "
                f"{result.request.accounting} accounting): **{verdict}** out of fold.")
    columns = st.columns(3)
    columns[0].metric("Calibrated weights", f"{result.weights.lambda_in:.3f} / {result.weights.lambda_out:.3f}",
                      help="λ_in / λ_out: the median over the folds of the weights chosen on each inner dev part.")
    columns[1].metric("Realized tokens a query", f"{result.tokens:,.0f}",
                      help=f"Out of fold, macro over benchmarks; 95% interval [{tokens_low:,.1f}, {tokens_high:,.1f}].")
    columns[2].metric("Realized macro F1", f"{result.f1:.3f}",
                      help=f"Out of fold; 95% interval [{f1_low:.3f}, {f1_high:.3f}].")
    st.caption(f"Target beside realized: tokens {tokens_low:,.1f} to {tokens_high:,.1f} (95%), "
               f"F1 {f1_low:.3f} to {f1_high:.3f} (95%), over {result.queries} queries.")
    st.dataframe(report["folds"], hide_index=True)
