"""`RewardAuditRequest`, torch-free: which proxy reward `forge rewards audit` audits on which host,
and the cross-fit of its routers. The command line reads its defaults from here without importing
the audit (`proxy_audit` imports torch, sklearn and scipy): each default is written once."""

from __future__ import annotations

from dataclasses import dataclass

from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation.settings import CROSSFIT_FOLDS, CROSSFIT_STAGE2_STEPS, EvaluationSettings
from forge_core.evidence.retrievers import evaluated_retriever_hash
from forge_core.rewards.sources import JUDGE, check_reward_source, latest_judge_key
from forge_core.routing.utility import CostWeights
from forge_core.store import Store


@dataclass(frozen=True)
class RewardAuditRequest:
    """Which proxy to audit on which host, and the cross-fit of its routers."""

    host: str = EvaluationSettings.host
    reward: str = "consensus"  # judge or consensus
    judge_key: str | None = None  # judge rewards of this key (default: the newest)
    n_arms: int = EvaluationSettings.n_arms
    weights: CostWeights = EvaluationSettings.weights  # the cost weights of the utilities compared
    routers: tuple[str, ...] = ("forge_lite",)  # routers trained on gold and on the proxy ("" none: no crossfit)
    folds: int = CROSSFIT_FOLDS
    split_seed: int = EvaluationSettings.split_seed  # seeds the folds
    seed: int = EvaluationSettings.seed  # router training seed
    max_epochs: int = 50  # Stage 1 epochs at most (early-stopped on the fold's inner dev rows)
    grid: bool = False  # also Stage 2 on gold or proxy rewards (the paper's gold/gold, gold/proxy, proxy/proxy)
    stage2_steps: int = CROSSFIT_STAGE2_STEPS  # Stage-2 steps per fold and recipe (with grid)
    retriever: str = EvaluationSettings.retriever  # whose evidence the Summary and Raw outcomes were made under

    def __post_init__(self) -> None:
        from forge_core.policies.registry import TrainedRouter, variants  # imports sklearn: not at the CLI's start

        check_reward_source(self.reward, proxies_only=True)
        unknown = sorted(set(self.routers) - set(variants(TrainedRouter)))
        if unknown:
            raise InvalidInput(f"unknown router(s) {', '.join(unknown)} (known: {', '.join(variants(TrainedRouter))})")
        if self.folds < 2:
            raise InvalidInput(f"the audit's crossfit needs at least 2 folds, not {self.folds}")
        if self.grid and not self.routers:
            raise InvalidInput("the gold/proxy grid trains routers: name one (it cannot go with --no-crossfit)")
        if self.stage2_steps < 1:
            raise InvalidInput(f"Stage 2 needs at least 1 step, not {self.stage2_steps}")

    def check(self, store: Store) -> None:
        """Refuse a host without outcomes (under the retriever), or judge rewards that were never computed."""
        if self.host not in store.hosts_with_outcomes():
            raise MissingStep(f"host '{self.host}' has no stored outcomes: run `forge enumerate --host {self.host}`")
        config_hash = evaluated_retriever_hash(store, self.host, self.retriever)
        if self.reward == JUDGE and self.judge_key is None:
            latest_judge_key(store, self.host, config_hash, self.retriever)
