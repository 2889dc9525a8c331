"""The Live query page's results: a routed answer beside Always-Raw (an extra call that routing
does not need, made for the comparison), and the session's history.

It shows `forge_core.routing.live.RoutedAnswer` records; every number comes from the record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from app import live_charts, ui
from forge_core.evidence.answering import ArmAnswer
from forge_core.policies.guard import guard_for_question
from forge_core.reports.checkpoint_views import name_with_id
from forge_core.reports.reliability import Reliability
from forge_core.rewards.live_support import LiveSupport
from forge_core.rewards.support_verdict import CONTRADICTED, SUPPORTED
from forge_core.routing.confidence import Confidence, share_right
from forge_core.routing.guard import Guard
from forge_core.routing.live import (
    EXACT_MATCH,
    EXTRA_CALL,
    NO_OVERLAP,
    OVERRIDE,
    SOME_OVERLAP,
    UNSCORED,
    RoutedAnswer,
    answer_verdict,
    session_totals,
    verdict_sentence,
)

VERDICT_BOXES = {EXACT_MATCH: st.success, SOME_OVERLAP: st.warning, NO_OVERLAP: st.error, UNSCORED: st.info}
VERDICT_ICONS = {EXACT_MATCH: ":material/check_circle:", SOME_OVERLAP: ":material/rule:",
                 NO_OVERLAP: ":material/cancel:", UNSCORED: ":material/chat:"}


INPUT_NAMES = {"question": "the question", "benchmark": "the benchmark", "host": "the host", "router": "the router",
               "weights": "the weights", "retriever": "the retriever"}


def changed_inputs(answered: dict, now: dict) -> str:
    """What differs between the inputs of the answer on screen and the page's current ones, e.g.
    "the question, the weights" ("" when nothing does)."""
    return ", ".join(label for name, label in INPUT_NAMES.items() if answered.get(name) != now.get(name))


def confidence_text(confidence: Confidence, held_out: Reliability | str | None = None) -> str:
    """"+0.012 utility over summary:no_think (95% of held-out decisions with this margin were
    right)": the chosen arm's margin in utility units, and how often such margins were right on the
    router's held-out queries when it has any."""
    if confidence.runner_up is None:
        return "no other arm to compare"
    text = f"{confidence.margin:+.3f} utility over {confidence.runner_up}"
    if isinstance(held_out, Reliability):
        right = share_right(held_out.table, confidence.margin)
        if right is not None:
            text += f" ({right:.0%} of held-out decisions with this margin were right)"
    return text


GUARD_FALLBACK_NAMES = {"arm": "best fixed arm", "mix": "cost-matched mix"}  # `--guard-fallback`'s choices


def guard_verdict(guard: Guard | str, result: RoutedAnswer) -> None:
    """Whether the router's guard (`forge_core.policies.guard`: the fallback unless the margin clears a
    threshold held out for the risk alpha) held this query at its fallback, and why; under a mix
    fallback, the arm the mix drew for this question, as `forge serve` draws it; or why the router
    has no guard."""
    if isinstance(guard, str):
        st.caption(f"No guard for this router: {guard}.")
        return
    if guard.mix is not None:
        guard = guard_for_question(guard, result.question, len(result.probabilities))
        st.caption(f"The cost-matched mix drew {guard.fallback_arm} for this question: the same question "
                   "always draws the same arm, and many questions spend the arms in the mix's shares.")
    margin = result.margin if result.margin is not None else 0.0
    held = result.margin is not None and guard.holds(result.router_arm, margin)
    text = f"Guard ({guard.summary()}): {guard.why(result.router_arm, margin)}."
    if held:
        st.warning(text + f" This answer is the router's; the guarded router would have answered with "
                          f"{guard.fallback_arm}.", icon=":material/shield:")
    else:
        st.caption(text)


def untrained_text(confidence: Confidence) -> str:
    """Names the chosen arm's thinking twins that carry its probability (a thinking head that learned nothing)."""
    if not confidence.untrained_twins:
        return ""
    return (f"{', '.join(confidence.untrained_twins)} carries exactly the chosen arm's probability: the router's "
            "thinking head learned nothing, so that is not a tie it weighed (left out of the runner-up).")


def routed_answer(result: RoutedAnswer, held_out: Reliability | str | None = None,
                  names: Mapping[str, str] | None = None) -> None:
    """The routing decision (its margin in utility units, read against `held_out`: the router's
    reliability table, or why it has none), both answers side by side, the saving, and the evidence;
    the router by its name in `names` (`checkpoint_names`, by checkpoint id) and its full id."""
    st.header("Routed answer")
    columns = st.columns([4, 2, 2, 3])  # cards that wrap: an arm name and the margin are shown whole at 1,024 px
    if result.checkpoint_id == OVERRIDE:
        ui.name_metric(columns[0], "Arm (picked by hand)", result.arm)
    else:
        ui.name_metric(columns[0], "Chosen arm", result.arm,
                       help=f"Router {name_with_id(names or {}, result.checkpoint_id)}, probability "
                            f"{result.probabilities[result.arm]:.3f}. "
                            f"The router is distilled to softmax(U / tau) with tau = {result.tau:g}, so tau times the "
                            "difference of two arms' log probabilities estimates their utility difference: the margin "
                            "is the chosen arm's estimated utility over the runner-up's. "
                            + untrained_text(result.confidence)
                            + (f" No held-out share: {held_out}." if isinstance(held_out, str) else ""))
        columns[0].caption(confidence_text(result.confidence, held_out))
    ui.name_metric(columns[1], "Routing time", f"{result.routing_ms:,.0f} ms",
                   help="Retrieval, features (probes included) and the router's forward pass.")
    ui.name_metric(columns[2], "Probe tokens", f"{result.probe_tokens:,}",
                   help=f"{result.probe_tokens_in:,} in + {result.probe_tokens_out:,} out, over "
                        f"{result.probe_calls} host calls before routing (a Full router's probes); "
                        f"{result.host_calls} host calls in all for this answer"
                        f"{' (the greedy probe was the answer)' if result.answer_is_probe else ''}.")
    if result.nothing_to_compare:
        ui.name_metric(columns[3], "Saved vs Always-Raw", "same arm",
                       help="The router chose raw:no_think, Always-Raw's own arm: one call, the same answer.")
        _answer_column(f"Routed: {result.arm} (Always-Raw's own arm: nothing to compare, one call)", result.answer,
                       result.f1, result.golds)
        _probabilities_and_evidence(result)
        return
    tokens_in, tokens_out = result.host_tokens
    saved = f"{result.tokens_saved:,} tokens ({result.saved_percent:+.1f}%)"
    ui.name_metric(columns[3], "Saved vs Always-Raw", saved,
                   help=f"Always-Raw: {result.raw_cost.tokens_in:,} in + {result.raw_cost.tokens_out:,} out "
                        f"tokens ({result.raw_cost.source}); this question: {tokens_in:,} in + {tokens_out:,} out "
                        "(answer and probes). λ_in prices the tokens in, λ_out those out.")
    routed, raw = st.columns(2)
    with routed:
        _answer_column(f"Routed: {result.arm}", result.answer, result.f1, result.golds)
    with raw:
        if result.raw_answer is None:
            st.subheader("Always-Raw: raw:no_think")
            st.info(f"Not asked: Always-Raw's cost, {result.raw_cost.tokens:,} tokens, is its stored outcome "
                    "on this host. Switch on the comparison to see its answer.", icon=":material/database:")
        else:
            title = "Always-Raw: raw:no_think"
            if result.raw_cost.source == EXTRA_CALL:
                title += " (an extra call that routing does not need)"
            _answer_column(title, result.raw_answer, result.raw_f1, result.golds)
    _probabilities_and_evidence(result)


SHOW_PROBABILITIES_KEY = "live_show_probabilities"


def _probabilities_and_evidence(result: RoutedAnswer) -> None:
    """The router's view of every arm in utility units (the margin's), its probabilities on request,
    and the evidence."""
    if result.probabilities:
        st.caption(f"What the router expects each arm to lose against its pick, in utility: τ ({result.tau:g}) times "
                   "the gap of their log probabilities (the router is distilled to softmax(U / τ)).")
        st.vega_lite_chart(*live_charts.arm_implied_utilities(result.confidence.implied_utility, result.arm))
        if st.toggle("Show the router's probabilities too", key=SHOW_PROBABILITIES_KEY,
                     help="The raw output of the router: near-equal probabilities still order the arms, and their "
                          "log gaps are the utility above."):
            st.vega_lite_chart(*live_charts.arm_probabilities(result.probabilities, result.arm))
    with st.expander("Evidence"):
        st.text(result.answer.support_text or "(none: the Direct arm gets the question only)")
        st.dataframe(ui.evidence_frame(result.evidence), hide_index=True)


def support_verdict(support: LiveSupport | str | None) -> None:
    """The evaluator's verdict on the answer on screen (a string: why there is none; None: no evaluator asked)."""
    if support is None:
        return
    if isinstance(support, str):
        st.warning(f"Support {support}", icon=":material/help:")
        return
    box = {SUPPORTED: st.success, CONTRADICTED: st.error}.get(support.verdict, st.info)
    box(f"Support: **{support.verdict}** by {support.evaluator} (does the evidence in the answer's prompt support "
        f"it?). {rating_sentence(support.rating)}", icon=":material/fact_check:")


def rating_sentence(rating: float | None) -> str:
    """The evaluator's correctness rating of the routed answer, to read beside its lexical F1 verdict."""
    if rating is None:
        return "Judge rating: none (its reply held no number from 0 to 10)."
    return (f"Judge rating: **{rating * 10:.0f}/10** (is the answer correct? the judge prompt of `forge rewards "
            "judge`), beside the F1 verdict, which counts shared words only.")


def session_history(answers: Sequence[RoutedAnswer], names: Mapping[str, str] | None = None) -> None:
    """Every question of the session with the running totals, downloadable as CSV; each router by
    its name in `names` (`checkpoint_names`, by checkpoint id), its full id in a column beside it."""
    st.header("Session history")
    totals = session_totals(answers)
    columns = st.columns(5)  # cards that wrap: every label and value shown whole at 1,024 px
    ui.name_metric(columns[0], "Questions", f"{totals.questions:,}")
    ui.name_metric(columns[1], "Tokens spent", f"{totals.tokens:,}", help="By the routed answers, probes included.")
    ui.name_metric(columns[2], "Saved in the session", f"{totals.tokens_saved:,} tokens",
                   help=f"Always-Raw would have spent {totals.raw_tokens:,} tokens on the same questions.")
    ui.name_metric(columns[3], "Mean F1 (routed)", _score(totals.mean_f1),
                   help=f"Over the {totals.scored} questions with gold answers (token F1).")
    if totals.both_scored:
        ui.name_metric(columns[4], f"F1 routed vs Raw, {totals.both_scored} both answered",
                       f"{_score(totals.both_f1)} vs {_score(totals.both_raw_f1)}",
                       help=f"Mean token F1 of the routed and the Always-Raw answers over the same "
                            f"{totals.both_scored} questions: those with gold answers whose Always-Raw answer "
                            "was made live (switch on the comparison to add a question).")
    else:
        ui.name_metric(columns[4], "F1 routed vs Raw", "–", help="No question with gold answers had its Always-Raw "
                                                                 "answer made live: switch on the comparison.")
    history = pd.DataFrame([answer.history_row() for answer in answers])
    history.insert(history.columns.get_loc("router") + 1, "router id", history["router"])
    history["router"] = history["router"].map(lambda checkpoint_id: (names or {}).get(checkpoint_id, checkpoint_id))
    st.dataframe(history, hide_index=True, column_config={"router id": st.column_config.TextColumn(
        help="The checkpoint's full id, as `forge serve --router` and `forge ask --route --router` take it.")})
    st.download_button("Download the history (CSV)", history.to_csv(index=False), "live_queries.csv", "text/csv",
                       icon=":material/download:")


def _answer_column(title: str, answer: ArmAnswer, f1: float | None, golds: tuple[str, ...]) -> None:
    st.subheader(title)
    verdict = answer_verdict(f1)
    VERDICT_BOXES[verdict](answer.answer or "(empty answer)", icon=VERDICT_ICONS[verdict])
    if verdict != UNSCORED:
        st.caption(verdict_sentence(f1))
    if golds:
        st.caption(f"Scored answer: {answer.extracted!r}; gold: {' | '.join(golds)}")
    columns = st.columns(4)
    columns[0].metric("Tokens in", f"{answer.tokens_in:,}")
    columns[1].metric("Tokens out", f"{answer.tokens_out:,}")
    columns[2].metric("Latency", f"{answer.latency_ms / 1000:,.1f} s")
    columns[3].metric("F1", _score(f1))


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
