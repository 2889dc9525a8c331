"""The training-free gates' decision rules and threshold fitting, in exact numbers."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.gates import (
    DARTGate,
    DraftSignals,
    LogprobLadder,
    TARGGate,
    best_ladder,
    best_threshold,
    drafts_agree,
    ladder_steps,
    mean_logprob,
    platt,
    platt_fit,
    prefix_margin,
    threshold_candidates,
)
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


def test_prefix_margin_is_the_mean_top_two_gap_over_the_prefix() -> None:
    assert prefix_margin([-0.1, -0.2, -1.0], [-2.1, -0.7, -1.5], prefix=2) == pytest.approx(1.25)
    assert prefix_margin([-0.1, -0.2, -1.0], [-2.1, -0.7, -1.5], prefix=16) == pytest.approx(1.0)
    assert prefix_margin([], []) == -np.inf
    assert mean_logprob([-0.5, -1.5]) == -1.0 and mean_logprob([]) == -np.inf


def test_drafts_agree_under_squad_normalization() -> None:
    assert drafts_agree("Paris", "paris.")
    assert drafts_agree("The Eiffel Tower", "Eiffel Tower in Paris")  # F1 0.8
    assert not drafts_agree("Paris", "London")
    assert not drafts_agree("Paris", "  ")


def test_the_threshold_maximizes_the_mean_and_ties_go_to_the_smallest() -> None:
    scores = np.array([0.1, 0.5, 0.9, 2.0])
    below, above = np.array([1.0, 1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, 1.0])
    candidates = threshold_candidates(scores, np.linspace(0, 1, 5))
    np.testing.assert_allclose(candidates, [0.1, 0.4, 0.7, 1.175, 2.0, np.inf])
    assert best_threshold(scores, below, above, candidates) == pytest.approx(0.7)  # 0.1 and 0.5 below: mean 1
    assert best_threshold(scores, above, above, candidates) == pytest.approx(0.1)  # all tie: the smallest


def test_the_ladder_steps_and_its_fitted_pair() -> None:
    np.testing.assert_array_equal(ladder_steps(np.array([0.9, 0.8, 0.5, 0.2]), 0.8, 0.4), [0, 0, 1, 2])
    probability = np.array([0.9, 0.6, 0.3])
    utility = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.5], [0.0, 0.5, 1.0]])  # each row's best step: 0, 1, 2
    assert best_ladder(probability, utility, np.array([0.3, 0.6, 0.9, 1.01])) == (0.9, 0.6)


def test_platt_scaling_reaches_the_penalized_log_loss_optimum() -> None:
    x, y = np.array([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0]), np.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    a, b = platt_fit(x, y)
    p = platt(x, a, b)
    assert abs((p - y).sum()) < 1e-8 and abs(((p - y) * x).sum() + 1e-3 * a) < 1e-8  # the gradient is zero
    assert a > 0
    np.testing.assert_array_equal(platt(np.array([-np.inf]), a, b), [0.0])  # no draft: probability 0


def _context(outcome_store: Store) -> EvalContext:
    return evaluation_context(outcome_store, "synthetic-host", 6, CostWeights(0.1, 0.2))


def test_targ_retrieves_exactly_the_unsure_drafts_and_charges_their_draft(outcome_store: Store) -> None:
    context = _context(outcome_store)
    gate = TARGGate()
    gate.fit(context)
    assert 0.5 < gate.threshold <= 4.9 and gate.retrieve_arm == RAW_NO_THINK  # synthetic margins: 0.5 or 4.9
    rows = context.rows("test")
    decisions = gate.decide(context, rows)
    unsure = np.array([len(q.split()) > 12 for q in _questions(context, rows)])
    np.testing.assert_array_equal(decisions.actions,
                                  np.where(unsure, context.arm(RAW_NO_THINK), context.arm(DIRECT_NO_THINK)))
    np.testing.assert_array_equal(decisions.prior_tokens_in, np.where(unsure, 60.0, 0.0))
    np.testing.assert_array_equal(decisions.prior_tokens_out, np.where(unsure, 5.0, 0.0))
    np.testing.assert_array_equal(decisions.prior_calls, unsure.astype(int))


def _questions(context: EvalContext, rows: np.ndarray) -> list[str]:
    by_key = {}
    for benchmark in set(context.table.benchmarks):
        by_key |= {(benchmark, e.example_id): e.question for e in context.store.examples(benchmark)}
    return [by_key[context.table.keys[row]] for row in rows]


def _signals(n: int, agree: np.ndarray) -> DraftSignals:
    zeros = np.zeros(n)
    return DraftSignals(np.ones(n, dtype=bool), zeros, zeros, zeros, zeros, agree,
                        np.full(n, 30.0), np.full(n, 7.0))


def test_dart_thinks_exactly_where_the_drafts_disagree_and_charges_both(outcome_store: Store) -> None:
    context = _context(outcome_store)
    agree = np.arange(len(context.table.keys)) % 3 == 0
    context._weight_free[("draft_signals",)] = _signals(len(agree), agree)  # the gate reads these signals
    gate = DARTGate()
    gate.fit(context)
    rows = context.rows("test")
    for support in ("direct", "raw"):
        decisions = gate._decide(context, rows, support)
        np.testing.assert_array_equal(decisions.actions, np.where(
            agree[rows], context.arm(f"{support}:no_think"), context.arm(f"{support}:cot")))
        greedy = decisions.actions != context.arm(DIRECT_NO_THINK)  # the greedy draft is Direct's answer
        direct = context.arm(DIRECT_NO_THINK)
        np.testing.assert_array_equal(decisions.prior_tokens_in,
                                      30.0 + np.where(greedy, context.table.tokens_in[rows, direct], 0.0))
        np.testing.assert_array_equal(decisions.prior_tokens_out,
                                      7.0 + np.where(greedy, context.table.tokens_out[rows, direct], 0.0))
        np.testing.assert_array_equal(decisions.prior_calls, 1 + greedy.astype(int))
    fit = np.concatenate([context.rows("train"), context.rows("dev")])
    values = {s: context.realized_utility(fit, gate._decide(context, fit, s)).mean() for s in ("direct", "raw")}
    values["summary"] = context.realized_utility(fit, gate._decide(context, fit, "summary")).mean()
    assert gate.support == max(values, key=values.get)


def test_the_ladder_is_calibrated_on_train_and_climbs_on_unsure_drafts(outcome_store: Store) -> None:
    context = _context(outcome_store)
    ladder = LogprobLadder()
    ladder.fit(context)
    assert ladder.a > 0  # a higher mean logprob, a likelier correct Direct answer (synthetic: short questions)
    rows = context.rows("test")
    decisions = ladder.decide(context, rows)
    unsure = np.array([len(q.split()) > 12 for q in _questions(context, rows)])
    assert set(decisions.actions[~unsure]) == {context.arm(DIRECT_NO_THINK)}
    assert context.arm(DIRECT_NO_THINK) not in set(decisions.actions[unsure])
    np.testing.assert_array_equal(decisions.prior_tokens_in, np.where(unsure, 60.0, 0.0))


def test_fresh_online_answers_a_gate_live_only_when_named() -> None:
    from forge_core.evaluation.fresh_online import fresh_policies
    from forge_core.policies.baselines import FixedArm, Oracle

    policies = [FixedArm(DIRECT_NO_THINK), TARGGate(), DARTGate(), Oracle()]
    assert [p.name for p in fresh_policies(policies, None)] == ["always_direct"]
    assert [p.name for p in fresh_policies(policies, ("targ", "oracle"))] == ["always_direct", "targ"]
