"""What to train: `TrainRequest` (the host, features, alphabet, cost weights, reward and the two
stages' settings), with its `check(store)` and its record (`to_dict`/`from_dict`, older field names
included).

It lives apart from the driver (`trainer`, which imports torch) so that `forge train` reads its
option defaults from the request's fields at start-up; the checks that need the feature stack
import it when they run.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from forge_core.arms import thinking_modes
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.retrievers import (
    DEFAULT_RETRIEVER,
    check_router_retriever,
    get_retriever_config,
    retriever_hash,
    retriever_option,
)
from forge_core.rewards.sources import GOLD, check_reward_source, proxy_rewards
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.outcome_table import load_outcome_table
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights
from forge_core.store import Store
from forge_core.training.settings import Stage1Config, Stage2Config, check_warm_start

VARIANTS = ("full", "lite", "bge")
# fields of a stored training request renamed since: old name -> new name (older job rows still load)
RENAMED_TRAIN_FIELDS = {"router": "router_kind"}
RENAMED_STAGE1_FIELDS = {"arms": "warm_start_arms"}


@dataclass(frozen=True)
class TrainRequest:
    """What to train; the stage configs carry the optimizer settings."""

    host: str = "embedded"
    variant: str = "full"  # full, lite or bge (the BGE+BM25 baseline)
    n_arms: int = 6
    stage: int = 1
    router_kind: str = "factorized"  # the network: factorized, or flat (the ablation)
    lambda_in: float = DEFAULT_LAMBDA_IN
    lambda_out: float = DEFAULT_LAMBDA_OUT
    rewards: str = "table"  # Stage 2: "table" (replay) or "live" (host calls for missing outcomes)
    reward: str = GOLD  # Stage 1's reward in the utility: gold (F1), judge or consensus
    stage2_reward: str = GOLD  # Stage 2's reward (table replay only for judge and consensus)
    parent: str | None = None  # Stage 2: the Stage-1 checkpoint to start from (default: newest match)
    split_seed: int = 0
    benchmarks: tuple[str, ...] | None = None  # only these benchmarks' queries (default: every one)
    stage1: Stage1Config = field(default_factory=Stage1Config)
    stage2: Stage2Config = field(default_factory=Stage2Config)
    conditioning: CostConditioning | None = None  # a cost-conditioned router (None: one for lambda_in/lambda_out)
    retriever: str = DEFAULT_RETRIEVER  # the evidence its outcomes and features were made under (a retriever name)

    @property
    def weights(self) -> CostWeights:
        """The cost weights as one value (validated on construction)."""
        return CostWeights(self.lambda_in, self.lambda_out)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InvalidInput(f"unknown variant '{self.variant}' (known: {', '.join(VARIANTS)})")
        if self.stage not in (1, 2):
            raise InvalidInput(f"stage is 1 or 2, not {self.stage}")
        if self.rewards not in ("table", "live"):
            raise InvalidInput(f"rewards are 'table' or 'live', not '{self.rewards}'")
        check_reward_source(self.reward)
        check_reward_source(self.stage2_reward)
        if self.stage == 2 and self.rewards == "live" and self.stage2_reward != GOLD:
            raise InvalidInput("live Stage-2 rewards are gold F1: use the table replay for judge or consensus")
        thinking_modes(self.n_arms)  # validates the alphabet size
        CostWeights(self.lambda_in, self.lambda_out)  # validates the weights
        if self.rewards == "live" and self.retriever != DEFAULT_RETRIEVER:
            raise InvalidInput("live Stage-2 rewards use the default bm25 evidence: replay the table (rewards "
                               "'table') under another retriever")
        if self.conditioning is not None and self.rewards != "table":
            raise InvalidInput("a cost-conditioned Stage 2 replays the table's rewards (rewards 'table')")
        check_warm_start(self.stage1, self.n_arms)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the jobs table's `params`, a job's request file)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict[str, Any] | str) -> TrainRequest:
        """The request `to_dict` wrote (or its JSON), as older versions wrote it too (renamed fields
        load under today's names); fields this version does not know are left out."""
        values = json.loads(params) if isinstance(params, str) else dict(params)
        values = {RENAMED_TRAIN_FIELDS.get(key, key): value for key, value in values.items()}
        known = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in values.items() if key in known}
        stage1_fields = {field.name for field in dataclasses.fields(Stage1Config)}
        stage2_fields = {field.name for field in dataclasses.fields(Stage2Config)}
        stage1 = {RENAMED_STAGE1_FIELDS.get(key, key): value for key, value in values.get("stage1", {}).items()}
        values["stage1"] = Stage1Config(**{k: v for k, v in stage1.items() if k in stage1_fields})
        values["stage2"] = Stage2Config(**{k: v for k, v in values.get("stage2", {}).items() if k in stage2_fields})
        if values.get("benchmarks") is not None:
            values["benchmarks"] = tuple(values["benchmarks"])
        if values.get("conditioning") is not None:
            values["conditioning"] = CostConditioning.from_dict(values["conditioning"])
        return cls(**values)

    def check(self, store: Store) -> None:
        """Refuse, with the next step, what the training would refuse on this store: a host
        without complete train and dev queries (or without probes for Full), an unknown parent, a
        Stage 2 run without a Stage-1 checkpoint to start from. The one place a request is checked:
        the CLI, the Train page and the jobs call it before training."""
        table = load_outcome_table(store, self.host, self.n_arms, self.split_seed, self.benchmarks,
                                   labeled_only=self.training_reward == GOLD,
                                   retriever_hash=self.retriever_hash(store))
        if self.variant == "full" and not table.has_probes.any():
            raise MissingStep(f"no complete query of host '{self.host}' has probes (Full features need them): "
                              f"run `forge enumerate --host {self.host} --probes`, or train Lite")
        if self.variant == "full":
            table = table.subset(table.has_probes)
        for split in ("train", "dev"):
            if not (table.splits == split).any():
                raise MissingStep(f"host '{self.host}' has no complete {split} queries on {self.n_arms} arms: "
                                  f"run `forge enumerate --host {self.host} --split {split}"
                                  f"{retriever_option(self.retriever)}`")
        if self.training_reward != GOLD:
            proxy_rewards(store, table, self.training_reward)  # refuses one missing on the train or dev rows
        if self.parent is not None:
            from forge_core.routing.checkpoints import load_checkpoint  # imports the feature stack (scipy)

            parent = load_checkpoint(store, self.parent)  # an unknown or damaged parent is refused by its id
            check_router_retriever(self.parent, parent.lineage, get_retriever_config(store, self.retriever))
        if self.stage == 2 and self.parent is None and self.default_parent(store) is None:
            kind = " cost-conditioned" if self.conditioned else ""
            raise MissingStep(f"Stage 2 starts from a{kind} Stage-1 checkpoint: train one first (Stage 1, "
                              f"{self.variant}, {self.n_arms} arms), or `forge train --stage 1 --variant "
                              f"{self.variant}{' --conditioned' if self.conditioned else ''}"
                              f"{retriever_option(self.retriever)}`")

    @property
    def conditioned(self) -> bool:
        """Whether the router takes the cost weights as inputs (one router for every weight)."""
        return self.conditioning is not None

    def retriever_hash(self, store: Store) -> str:
        """The configuration hash of the request's retriever ("" for the default BM25 evidence)."""
        return retriever_hash(get_retriever_config(store, self.retriever))

    def default_parent(self, store: Store) -> str | None:
        """Stage 2's parent when none is named: the newest Stage-1 checkpoint of the variant and
        alphabet, cost-conditioned or not as this request."""
        from forge_core.routing.checkpoints import latest_checkpoint  # imports the feature stack (scipy)

        return latest_checkpoint(store, self.host, self.variant, stage=1, n_arms=self.n_arms,
                                 conditioned=self.conditioned, retriever_hash=self.retriever_hash(store))

    @property
    def training_reward(self) -> str:
        """The reward this request's stage trains on."""
        return self.stage2_reward if self.stage == 2 else self.reward
