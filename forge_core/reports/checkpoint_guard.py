"""The guard around a stored router checkpoint (`forge_core.policies.guard`), for the Live query and
`forge serve --guard`: its fallback is the best fixed arm on the checkpoint's own train and dev
queries (or, `--guard-fallback mix`, the cost-matched mix of fixed arms there), and its margin
threshold is chosen for the risk alpha on the dev queries (held out from the router's fit: they
only stopped its training early), at the checkpoint's weights or, for a cost-conditioned router,
at the asked ones. A live decision is then read against it: held at the fallback, or deviated, and why.
"""

from __future__ import annotations

import numpy as np

from forge_core.errors import MissingStep
from forge_core.policies.context import EvalContext
from forge_core.policies.guard import best_fixed_arm, cost_matched_mix, drawn_arms
from forge_core.policies.routers import RouterPolicy
from forge_core.reports.reliability import checkpoint_outcomes
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.confidence import checkpoint_tau, margins
from forge_core.routing.guard import GUARD_ALPHA, Guard, calibrated_guard
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


def checkpoint_guard(store: Store, checkpoint_id: str, weights: CostWeights | None = None,
                     alpha: float = GUARD_ALPHA, fallback: str = "arm") -> Guard:
    """The checkpoint's guard (see the module docstring), its fallback the best fixed arm ("arm") or
    the cost-matched mix ("mix": `policies.guard.cost_matched_mix`, each query falling back to the arm
    the mix draws for it); refused without complete dev queries."""
    from forge_core.reports.action_map import map_weights

    checkpoint = load_checkpoint(store, checkpoint_id)
    lineage = checkpoint.lineage
    host = lineage["host"]
    table, normalizer = checkpoint_outcomes(store, checkpoint)
    context = EvalContext(store, table, normalizer, map_weights(lineage, weights))
    dev = context.rows("dev")
    if not len(dev):
        raise MissingStep(f"host '{host}' has no complete dev queries to fit {checkpoint_id}'s guard on")
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    policy.fit(context)
    arms = tuple(context.table.arms)
    chosen, _, margin = margins(policy.probabilities(context, dev), arms, checkpoint_tau(lineage))
    fitted = np.concatenate([context.rows("train"), dev])
    if fallback == "mix":
        mix = cost_matched_mix(context, policy, fitted)
        return calibrated_guard(chosen, margin, context.utility[dev], drawn_arms(context, dev, mix), mix.option,
                                alpha, mix=mix.option)
    best = best_fixed_arm(context, fitted)
    return calibrated_guard(chosen, margin, context.utility[dev], best, arms[best], alpha)
