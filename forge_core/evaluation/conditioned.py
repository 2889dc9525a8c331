"""The cost-conditioned FORGE routers as policies: one checkpoint decides at whatever cost
weights an evaluation asks (see `forge_core.routing.conditioning`).

`forge_lite_cond` and `forge_full_cond` join an evaluation when the store has a conditioned
checkpoint of their variant (`forge train --conditioned`); they are never trained on the fly,
unlike the per-weight routers, whose checkpoints stay the default for reproducing the paper.
`demo_questions` finds stored questions whose arm changes as the weights rise (the Live query
page's demo list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.action_map import stored_questions
from forge_core.evaluation.context import evaluation_context
from forge_core.evaluation.policies import RouterPolicy
from forge_core.routing.embedders import embedder_name
from forge_core.store import Store

CONDITIONED_POLICIES = {"forge_full_cond": "full", "forge_lite_cond": "lite"}  # policy name -> variant


def conditioned_checkpoint(store: Store, host: str, variant: str, n_arms: int = 6, split_seed: int = 0,
                           seed: int = 0, benchmarks: Sequence[str] | None = None) -> str | None:
    """The cost-conditioned checkpoint of a variant trained on this split seed, seed, benchmarks and
    the current embedder: of the latest stage, the newest; None when there is none."""
    found = store.find_checkpoints(
        host, variant=variant, n_arms=n_arms, lambda_in=None, lambda_out=None, split_seed=split_seed, seed=seed,
        benchmarks=list(benchmarks) if benchmarks is not None else None, embedder=embedder_name())
    found = found[found["conditioned"]]
    if found.empty:
        return None
    return str(found[found["stage"] == found["stage"].max()]["checkpoint_id"].iloc[0])


def conditioned_policies(store: Store, host: str, n_arms: int = 6, split_seed: int = 0, seed: int = 0,
                         benchmarks: Sequence[str] | None = None,
                         required: Sequence[str] = ()) -> list[RouterPolicy]:
    """A `RouterPolicy` per conditioned router the store has; one named in `required` but missing
    is refused with the step that trains it."""
    policies = []
    for name, variant in CONDITIONED_POLICIES.items():
        checkpoint = conditioned_checkpoint(store, host, variant, n_arms, split_seed, seed, benchmarks)
        if checkpoint is not None:
            policies.append(RouterPolicy(checkpoint, name))
        elif name in required:
            raise MissingStep(f"no cost-conditioned {variant} router for host '{host}' (split seed {split_seed}, "
                              f"seed {seed}, embedder '{embedder_name()}'): "
                              f"`forge train --conditioned --variant {variant}`")
    return policies


WEIGHT_LADDER = ((0.02, 0.04), (0.1, 0.2), (0.5, 1.0), (1.5, 3.0))  # rising weights along the paper's ratio 2


@dataclass(frozen=True)
class DemoQuestion:
    """A stored question whose arm, under a cost-conditioned router, changes as the weights rise."""

    benchmark: str
    example_id: str
    question: str
    arms: tuple[str, ...]  # the router's arm at each weight pair of `WEIGHT_LADDER`


def demo_questions(store: Store, host: str, checkpoint_id: str, split: str = "test", limit: int = 6,
                   ladder: Sequence[tuple[float, float]] = WEIGHT_LADDER) -> list[DemoQuestion]:
    """Up to `limit` complete `split` questions of the host whose arm under the conditioned
    checkpoint changes along `ladder` (decided on their stored features, no host call): those that
    leave Raw as the weights rise first, the most arms seen first, one benchmark after another."""
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    context = evaluation_context(store, host, _n_arms(store, checkpoint_id), *ladder[0])
    policy.fit(context)
    if policy.checkpoint.conditioning is None:
        raise InvalidInput(f"checkpoint {checkpoint_id} is not cost-conditioned: its arm never moves with the weights")
    rows = context.rows(split)
    arms = np.array([[context.table.arms[a] for a in policy.decide(replace(context, lambda_in=li, lambda_out=lo),
                                                                      rows).actions] for li, lo in ladder]).T
    moving = [i for i in range(len(rows)) if len(set(arms[i])) > 1]
    moving.sort(key=lambda i: (not arms[i][0].startswith("raw"), -len(set(arms[i]))))
    picked = _round_robin(moving, [context.table.keys[rows[i]][0] for i in moving], limit)
    keys = [context.table.keys[rows[i]] for i in picked]
    return [DemoQuestion(b, e, question, tuple(str(arm) for arm in arms[i]))
            for i, (b, e), question in zip(picked, keys, stored_questions(store, keys))]


def _round_robin(items: list[int], groups: list[str], limit: int) -> list[int]:
    """Up to `limit` items in their order, taking one of each group in turn."""
    queues: dict[str, list[int]] = {}
    for item, group in zip(items, groups):
        queues.setdefault(group, []).append(item)
    picked: list[int] = []
    while len(picked) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


def _n_arms(store: Store, checkpoint_id: str) -> int:
    found = store.checkpoint(checkpoint_id)
    if found is None:
        raise InvalidInput(f"no checkpoint '{checkpoint_id}' (see `forge checkpoints`)")
    return int(found[0]["n_arms"])
