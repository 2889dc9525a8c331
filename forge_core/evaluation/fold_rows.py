"""One crossfit fold fitted and scored: the rows a crossfit run stores for it, the same whether the
fold runs in this process (`crossfit`) or in a Ray task (`crossfit_ray`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from forge_core.policies.base import Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.policies.outcomes import score_decisions


def fold_rows(context: EvalContext, rows: np.ndarray, policies: list[Policy], stored: list[Policy],
              on_policy: Callable[[str], None] | None) -> pd.DataFrame:
    """Fit the policies on the fold's train/dev rows (in order) and score the `stored` ones'
    decisions on the held-out rows."""
    frames = []
    keys = [context.table.keys[i] for i in rows]
    for policy in policies:
        if on_policy:
            on_policy(policy.name)
        policy.fit(context)
        if policy not in stored:
            continue
        decisions = policy.decide(context, rows)
        outcome = score_decisions(context, rows, policy, decisions)
        frames.append(pd.DataFrame({
            "policy": policy.name, "kind": policy.kind, "benchmark": [k[0] for k in keys],
            "example_id": [k[1] for k in keys],
            "arm": [context.table.arms[a] for a in outcome.actions], "f1": outcome.f1,
            "deploy_utility": outcome.deploy_utility, "answer_utility": outcome.answer_utility,
            "deploy_tokens": outcome.deploy_tokens, "answer_tokens": outcome.answer_tokens, "calls": outcome.calls,
            **margin_columns(context, decisions)}))
    return pd.concat(frames, ignore_index=True)


def margin_columns(context: EvalContext, decisions: Decisions) -> dict:
    """A router's margin per decision and the runner-up it is taken over (None for other policies)."""
    if decisions.margin is None or decisions.runner_up is None:
        return {"margin": np.nan, "runner_up": None}
    return {"margin": decisions.margin,
            "runner_up": [context.table.arms[a] if a >= 0 else None for a in decisions.runner_up]}
