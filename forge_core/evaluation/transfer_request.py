"""What `forge eval transfer` is asked (`TransferRequest`) and the weights at which a store can answer it.

Apart from `forge_core.evaluation.transfer` (which trains and scores, with torch) so that the Transfer
page, which reads the report its view keeps, loads no training stack.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from forge_core.errors import InvalidInput
from forge_core.evaluation.settings import TRANSFER_CALIBRATION_SPLIT, EvaluationSettings
from forge_core.evaluation.setup import check_evaluation, weights_with_routers
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

CALIBRATION_SPLITS = ("train", "dev")  # where calibration queries come from: never the evaluated split


@dataclass(frozen=True)
class TransferRequest:
    """`forge eval transfer`: the source host's routers on the target host's stored outcomes."""

    source_host: str  # whose routers (trained on its data only)
    target_host: str  # whose queries, outcomes, probes and costs
    n_arms: int = EvaluationSettings.n_arms  # alphabet size, the same on both hosts
    weights: CostWeights = EvaluationSettings.weights  # the cost weights
    split: str = EvaluationSettings.split  # the target split evaluated (dev or test)
    split_seed: int = EvaluationSettings.split_seed  # which train/dev/test split, on both hosts
    accounting: str = EvaluationSettings.accounting  # "deploy": every call a decision needs; "answer": the answer
    calibrate: tuple[int, ...] = ()  # sizes K of target-side calibration (e.g. 25, 50, 100, 200)
    calibration_split: str = TRANSFER_CALIBRATION_SPLIT  # the target split calibration queries are drawn from
    store_calibrated: bool = True  # store each K's calibrated router (the first draw) as a target checkpoint
    retriever: str = EvaluationSettings.retriever  # whose evidence both hosts' Summary and Raw outcomes were made under

    def __post_init__(self) -> None:
        if self.source_host == self.target_host:
            raise InvalidInput("the source and the target host are the same: transfer needs two hosts")
        if self.calibration_split not in CALIBRATION_SPLITS or self.calibration_split == self.split:
            raise InvalidInput(f"calibration queries come from the target's train or dev split, never the evaluated "
                               f"one, not '{self.calibration_split}'")
        if any(k < 1 for k in self.calibrate):
            raise InvalidInput(f"--calibrate sizes are at least 1, not {min(self.calibrate)}")
        self.source_settings()  # validates the weights, the split and the accounting

    def source_settings(self) -> EvaluationSettings:
        """The settings whose routers are transferred (selected as the Cached protocol would)."""
        return EvaluationSettings(self.source_host, self.split, self.n_arms, self.weights,
                                  split_seed=self.split_seed, accounting=self.accounting, retriever=self.retriever)

    def target_settings(self) -> EvaluationSettings:
        """The settings of the target's own evaluation (its routers are the upper reference)."""
        return dataclasses.replace(self.source_settings(), host=self.target_host)

    def evaluations(self) -> list[EvaluationSettings]:
        """The settings whose features and routers must exist (`prepare_evaluation`)."""
        return [self.source_settings(), self.target_settings()]

    def check(self, store: Store) -> None:
        """Refuse, with a one-line `ForgeError`, a host without stored outcomes."""
        for settings in self.evaluations():
            check_evaluation(store, settings)


def stored_transfer_weights(store: Store, request: TransferRequest) -> list[CostWeights]:
    """The cost weights at which both hosts have every router the transfer needs
    (`forge_core.evaluation.setup.weights_with_routers` of each side), in increasing order."""
    source, target = (set(weights_with_routers(store, settings)) for settings in request.evaluations())
    return sorted(source & target, key=lambda weights: (weights.lambda_in, weights.lambda_out))
