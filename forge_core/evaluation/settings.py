"""The protocols' knobs, torch-free: the defaults the evaluation requests (`crossfit`, `calibration`,
`proxy_audit`, `fresh_online`) share with the `forge` command line, and `EvaluationSettings`, the
request every protocol takes; the command line reads its defaults from here without importing the
protocols (they import torch, sklearn and scipy): each default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge_core.errors import InvalidInput
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER
from forge_core.routing.utility import CostWeights, check_accounting

CROSSFIT_FOLDS = 5  # folds of a crossfit (stratified by benchmark): crossfit runs, calibration, the reward audit
CROSSFIT_STAGE = 1  # a crossfit's routers: Stage 1 (2: Stage 2 on top)
CROSSFIT_STAGE2_STEPS = 1000  # Stage-2 steps per fold: 5 folds x 3 routers stay minutes, not hours
CALIBRATION_RATIO = 2.0  # lambda_out / lambda_in along the ray calibration searches
CALIBRATION_VARIANT = "lite"  # the calibrated conditioned router's features: Lite needs no probe call per query
TRANSFER_CALIBRATION_SPLIT = "train"  # the target split a transfer's calibration queries are drawn from
DEFAULT_PER_BENCHMARK = 10  # Fresh Online's queries per benchmark: every call is a real one, so keep runs short
EVALUATED_SPLITS = ("dev", "test")


@dataclass(frozen=True)
class EvaluationSettings:
    """What an evaluation is asked for; every protocol (Cached, repeated, sweep, Fresh Online)
    takes one."""

    host: str = "embedded"  # whose outcomes, features and routers
    split: str = "test"  # the split evaluated (dev or test)
    n_arms: int = 6  # alphabet size: 3, 6 or 12
    weights: CostWeights = CostWeights()  # the cost weights
    policy_names: tuple[str, ...] | None = None  # only these policies (default: every one)
    split_seed: int = 0  # which of the three train/dev/test splits
    seed: int = 0  # training seed of routers fitted on the fly
    benchmarks: tuple[str, ...] | None = None  # only these benchmarks' queries (default: every one)
    accounting: str = "deploy"  # "deploy": every call a decision needs; "answer": the answering call only
    retriever: str = DEFAULT_RETRIEVER  # whose evidence the Summary and Raw outcomes were made under

    def __post_init__(self) -> None:
        from forge_core.policies.registry import check_policy_names  # imports sklearn: not at the CLI's start

        check_accounting(self.accounting)
        if self.split not in EVALUATED_SPLITS:
            raise InvalidInput(f"the evaluated split is dev or test, not '{self.split}' (routers and baselines "
                             "are fitted on train)")
        check_policy_names(self.policy_names or ())
