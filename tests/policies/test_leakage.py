"""Leakage: a deployable policy decides a held-out query from what it could know before answering
it (features, the answers of the calls it makes), never from that query's recorded outcomes.

In the Cached protocol (held out: the test split) and in one crossfit fold (held out: the fold),
the held-out rows' F1, EM and token counts are replaced by random values: every deployable
policy, fitted again, must take exactly the same actions on them, and the cost normalizer (fitted
on train rows) must not move. The oracle reads the outcomes by design: its actions must change,
which shows the scrambling reaches what a leaking policy would read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from forge_core.evaluation.crossfit import (
    CrossfitSettings,
    crossfit_policies,
    fold_assignment,
    fold_context,
    fold_splits,
)
from forge_core.policies.base import Policy
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.registry import build_baselines
from forge_core.policies.routers import FallbackPolicy, RouterPolicy
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.routing.utility import CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config

HOST = "synthetic-host"


def base_context(store: Store) -> EvalContext:
    """The Cached protocol's context of the synthetic host (default cost weights)."""
    return evaluation_context(store, HOST, 6, CostWeights(0.1, 0.2))


def with_table(context: EvalContext, table: OutcomeTable) -> EvalContext:
    """The context on another table, its cost normalizer fitted again (on train rows only)."""
    return dataclasses.replace(context, table=table, normalizer=table.fit_normalizer())


def scrambled(table: OutcomeTable, rows: np.ndarray) -> OutcomeTable:
    """The table with random F1, EM and token counts on `rows` (on copies of the arrays)."""
    rng = np.random.default_rng(0)
    f1, em, tokens_in, tokens_out = (a.copy() for a in (table.f1, table.em, table.tokens_in, table.tokens_out))
    shape = f1[rows].shape
    f1[rows] = rng.uniform(size=shape)
    em[rows] = f1[rows] > 0.5
    tokens_in[rows] = rng.integers(1, 5000, size=shape)
    tokens_out[rows] = rng.integers(1, 500, size=shape)
    return dataclasses.replace(table, f1=f1, em=em, tokens_in=tokens_in, tokens_out=tokens_out)


def actions(policies: list[Policy], context: EvalContext, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Each policy fitted on the context (in order: a fallback after its router), then its
    actions on `rows`."""
    chosen = {}
    for policy in policies:
        policy.fit(context)
        chosen[policy.name] = policy.decide(context, rows).actions
    return chosen


def assert_no_leak(make_policies: Callable[[], list[Policy]], context: EvalContext, leaked: EvalContext) -> None:
    """`leaked` is `context` with scrambled held-out ("test") rows: only the oracle may notice."""
    rows = context.rows("test")
    assert np.array_equal(leaked.rows("test"), rows) and len(rows) > 0
    assert leaked.normalizer == context.normalizer  # fitted on train rows, which were not scrambled
    policies = make_policies()
    original, scrambled_actions = actions(policies, context, rows), actions(make_policies(), leaked, rows)
    deployable = [policy.name for policy in policies if policy.deployable]
    assert len(deployable) == len(policies) - 1  # all but the oracle
    for name in deployable:
        np.testing.assert_array_equal(scrambled_actions[name], original[name], err_msg=name)
    assert not np.array_equal(scrambled_actions["oracle"], original["oracle"])


def test_cached_decisions_ignore_the_held_out_outcomes(trained_store: tuple[Store, str]) -> None:
    store, checkpoint_id = trained_store
    context = base_context(store)

    def make_policies() -> list[Policy]:
        router = RouterPolicy(checkpoint_id, "forge_lite")
        return [*build_baselines(), router, FallbackPolicy(router)]

    leaked = with_table(context, scrambled(context.table, context.rows("test")))
    assert_no_leak(make_policies, context, leaked)


def test_crossfit_fold_decisions_ignore_the_held_out_outcomes(outcome_store: Store) -> None:
    base = base_context(outcome_store)
    benchmarks = base.table.benchmarks
    splits = fold_splits(benchmarks, fold_assignment(benchmarks, 5, seed=0), held_out=0, dev_fraction=0.2, seed=0)
    context = fold_context(base, splits)
    leaked = fold_context(with_table(base, scrambled(base.table, context.rows("test"))), splits)
    settings = CrossfitSettings(HOST, stage1=Stage1Config(max_epochs=5))
    assert_no_leak(lambda: crossfit_policies(settings, base.table.arms), context, leaked)
