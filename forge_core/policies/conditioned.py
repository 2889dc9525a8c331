"""The cost-conditioned FORGE routers as policies: one checkpoint decides at whatever cost
weights an evaluation asks (see `forge_core.routing.conditioning`).

`forge_lite_cond` and `forge_full_cond` join an evaluation when the store has a conditioned
checkpoint of their variant (`forge train --conditioned`); they are never trained on the fly,
unlike the per-weight routers, whose checkpoints stay the default for reproducing the paper.
"""

from __future__ import annotations

from collections.abc import Sequence

from forge_core.errors import MissingStep
from forge_core.evidence.embedders import embedder_name
from forge_core.evidence.retrievers import retriever_name_for_hash, retriever_option
from forge_core.policies.registry import ConditionedRouter, variants
from forge_core.policies.routers import RouterPolicy
from forge_core.store import Store


def conditioned_checkpoint(store: Store, host: str, variant: str, n_arms: int = 6, split_seed: int = 0,
                           seed: int = 0, benchmarks: Sequence[str] | None = None,
                           retriever_hash: str = "") -> str | None:
    """The cost-conditioned checkpoint of a variant trained on this split seed, seed, benchmarks,
    retriever configuration (its hash) and the current embedder: of the latest stage, the newest;
    None when there is none."""
    found = store.find_checkpoints(
        host, retriever_hash, variant=variant, n_arms=n_arms, lambda_in=None, lambda_out=None,
        split_seed=split_seed, seed=seed, benchmarks=list(benchmarks) if benchmarks is not None else None,
        embedder=embedder_name())
    found = found[found["conditioned"]]
    if found.empty:
        return None
    return str(found[found["stage"] == found["stage"].max()]["checkpoint_id"].iloc[0])


def conditioned_policies(store: Store, host: str, n_arms: int = 6, split_seed: int = 0, seed: int = 0,
                         benchmarks: Sequence[str] | None = None,
                         required: Sequence[str] = (), retriever_hash: str = "") -> list[RouterPolicy]:
    """A `RouterPolicy` per conditioned router the store has (trained under the retriever
    configuration `retriever_hash`); one named in `required` but missing is refused with the step
    that trains it."""
    policies = []
    for name, variant in variants(ConditionedRouter).items():
        checkpoint = conditioned_checkpoint(store, host, variant, n_arms, split_seed, seed, benchmarks,
                                            retriever_hash)
        if checkpoint is not None:
            policies.append(RouterPolicy(checkpoint, name))
        elif name in required:
            raise MissingStep(f"no cost-conditioned {variant} router for host '{host}' (split seed {split_seed}, "
                              f"seed {seed}, embedder '{embedder_name()}'): "
                              f"`forge train --conditioned --variant {variant}"
                              f"{retriever_option(retriever_name_for_hash(store, retriever_hash))}`")
    return policies
