"""The FORGE routers as policies: a trained checkpoint (`RouterPolicy`, which also serves the
cost-conditioned checkpoints at the context's weights) and the paper's dev fallback rule around
one (`FallbackPolicy`)."""

from __future__ import annotations

import numpy as np

from forge_core.errors import InvalidInput
from forge_core.evidence.answering import ArmAnswer
from forge_core.evidence.embedders import spec_for_name
from forge_core.policies.base import NOTHINK_ARMS, Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.policies.kinds import ROUTER_KIND
from forge_core.policies.live_query import LiveQuery
from forge_core.routing.checkpoints import load_checkpoint
from forge_core.routing.features import needs_probes
from forge_core.statistics import paired_bootstrap_ci


class RouterPolicy(Policy):
    """A trained router checkpoint: argmax of its policy on the standardized features (a
    cost-conditioned checkpoint decides at the context's cost weights)."""

    kind = ROUTER_KIND

    def __init__(self, checkpoint_id: str, name: str) -> None:
        self.checkpoint_id = checkpoint_id
        self.name = name

    @property
    def live_variant(self) -> str:
        """The checkpoint's feature variant (known once fitted)."""
        return self.checkpoint.variant

    @property
    def live_embedder(self) -> str:
        """The embedder the checkpoint was trained on (known once fitted)."""
        return self.embedder

    def fit(self, context: EvalContext) -> None:
        """Load the checkpoint; it reads only features of the embedder it was trained on."""
        self.checkpoint = context.weight_free(("checkpoint", self.checkpoint_id),
                                              lambda: load_checkpoint(context.store, self.checkpoint_id))
        self.embedder = spec_for_name(self.checkpoint.lineage["embedder"])
        if self.checkpoint.record["n_arms"] != len(context.table.arms):
            raise InvalidInput(f"checkpoint {self.checkpoint_id} routes {self.checkpoint.record['n_arms']} arms, "
                             f"the evaluation has {len(context.table.arms)}")
        standardizer = self.checkpoint.standardizer
        if self.features(context).shape[1] != standardizer.embedding_dim + len(standardizer.mean):
            raise InvalidInput(f"checkpoint {self.checkpoint_id} was trained on other features")

    def features(self, context: EvalContext) -> np.ndarray:
        """The raw features the checkpoint reads: its variant, under its embedder."""
        return context.features(self.checkpoint.variant, self.embedder)

    def probabilities(self, context: EvalContext, rows: np.ndarray) -> np.ndarray:
        """[n, K] the router's action distribution."""
        return self.checkpoint.probabilities(self.features(context)[rows], context.weights)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        actions = self.probabilities(context, rows).argmax(axis=1)
        if needs_probes(self.checkpoint.variant):
            return context.probed_decisions(rows, actions)
        return Decisions.single(actions)


def dev_fallback(context: EvalContext, router: RouterPolicy, seed: int = 0) -> dict[str, str]:
    """Per benchmark: "router" where the lower 95% bound of the router's dev utility gain over the
    best fixed arm is positive, else that fixed arm's name (the paper's fallback rule)."""
    dev = context.rows("dev")
    utility = context.utility[dev]
    benchmarks = context.table.benchmarks[dev]
    router_utility = context.realized_utility(dev, router.decide(context, dev))
    rule = {}
    for benchmark in np.unique(benchmarks):
        mask = benchmarks == benchmark
        fixed = {arm: utility[mask, context.arm(arm)].mean() for arm in NOTHINK_ARMS}
        best_arm = max(fixed, key=fixed.get)
        gain = router_utility[mask] - utility[mask, context.arm(best_arm)]
        interval = paired_bootstrap_ci(gain, np.zeros_like(gain), np.full(mask.sum(), benchmark), seed=seed)
        rule[str(benchmark)] = "router" if interval.above else best_arm
    return rule


class FallbackPolicy(Policy):
    """A router used only on benchmarks where the dev fallback rule keeps it."""

    kind = ROUTER_KIND

    def __init__(self, router: RouterPolicy) -> None:
        self.router = router
        self.name = self.name_for(router.name)

    @staticmethod
    def name_for(router_name: str) -> str:
        """The policy name of the fallback rule around a router."""
        return f"{router_name}_fallback"

    def fit(self, context: EvalContext) -> None:
        self.rule = dev_fallback(context, self.router)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        benchmarks = context.table.benchmarks[rows]
        fixed = np.array([self.rule.get(b, "router") for b in benchmarks], dtype=object)
        routed = fixed == "router"
        fixed_actions = np.array([0 if choice == "router" else context.arm(choice) for choice in fixed])
        return self.router.decide(context, rows).where(routed, fixed_actions)

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        choice = self.rule.get(query.benchmark, "router")
        if choice == "router":
            return await self.router.answer_live(query)
        return await query.answer(choice)
