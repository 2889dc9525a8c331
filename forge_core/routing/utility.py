"""The routing objective: cost normalization, Pareto utility, Boltzmann target and oracle.

Per query x and arm a, `U(x, a) = F1(x, a) - lambda_in * c_in(a) - lambda_out * c_out(x, a)`,
with F1 as a fraction in [0, 1] and token costs divided by their maxima over the training
set's (query, arm) entries. The router's distillation target is `softmax(U(x, .) / tau)`.

Everything here works on numpy arrays; the caller assembles [N, K] matrices (query x arm, in
action order) from the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from forge_core.errors import InvalidInput

DEFAULT_LAMBDA_IN = 0.10
DEFAULT_LAMBDA_OUT = 0.20
FIT_SPLIT = "train"
ACCOUNTINGS = {  # what each accounting charges a decision; "deploy" is the default everywhere
    "deploy": "every host call a decision needs on a new query (probes, earlier cascade calls, the answer)",
    "answer": "the answering call only (the paper's Cached cost: excludes probes and earlier calls)",
}


def _token_array(tokens: ArrayLike, name: str) -> NDArray[np.float64]:
    values = np.asarray(tokens, dtype=np.float64)
    if values.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"{name} must be finite and non-negative token counts")
    return values


@dataclass(frozen=True)
class CostNormalizer:
    """Divides input and output token counts by their training-set maxima.

    Fitted on every (query, arm) entry of the training split only, so dev and test costs can
    exceed 1. Construct it with `CostNormalizer.fit(...)` or `CostNormalizer.from_dict(...)`.
    """

    max_input_tokens: float
    max_output_tokens: float

    @classmethod
    def fit(cls, tokens_in: ArrayLike, tokens_out: ArrayLike, split: str) -> CostNormalizer:
        """Fit on the training split's token counts; any other split is refused (leakage)."""
        if split != FIT_SPLIT:
            raise ValueError(f"cost maxima are fitted on the train split only, not '{split}'")
        max_in = float(_token_array(tokens_in, "tokens_in").max())
        max_out = float(_token_array(tokens_out, "tokens_out").max())
        if max_in <= 0 or max_out <= 0:
            raise InvalidInput("the training set has no input or no output tokens to normalize by")
        return cls(max_in, max_out)

    def transform(
        self, tokens_in: ArrayLike, tokens_out: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Normalized costs (c_in, c_out), same shapes as the inputs."""
        c_in = _token_array(tokens_in, "tokens_in") / self.max_input_tokens
        c_out = _token_array(tokens_out, "tokens_out") / self.max_output_tokens
        return c_in, c_out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, tagged with the split it was fitted on."""
        return {
            "fit_split": FIT_SPLIT,
            "max_input_tokens": self.max_input_tokens,
            "max_output_tokens": self.max_output_tokens,
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> CostNormalizer:
        """Rebuild from `to_dict` output; refuses a record not fitted on train."""
        if record.get("fit_split") != FIT_SPLIT:
            raise ValueError("refusing a cost normalizer that was not fitted on the train split")
        max_in = float(record["max_input_tokens"])
        max_out = float(record["max_output_tokens"])
        if not (np.isfinite(max_in) and np.isfinite(max_out) and max_in > 0 and max_out > 0):
            raise ValueError("cost normalizer maxima must be finite and positive")
        return cls(max_in, max_out)


def check_accounting(accounting: str) -> None:
    """Refuse an accounting other than "deploy" or "answer"."""
    if accounting not in ACCOUNTINGS:
        raise InvalidInput(f"accounting is {' or '.join(ACCOUNTINGS)}, not '{accounting}'")


@dataclass(frozen=True)
class CostWeights:
    """The two cost weights of the objective, one value: the price of a normalized input and of a
    normalized output token in F1 points. `utility` is the objective, `charge` what host calls cost
    in it; both are written here only. Weights that are negative or not finite are refused."""

    lambda_in: float = DEFAULT_LAMBDA_IN  # input-token cost weight
    lambda_out: float = DEFAULT_LAMBDA_OUT  # output-token cost weight

    def __post_init__(self) -> None:
        if not (np.isfinite(self.lambda_in) and np.isfinite(self.lambda_out)
                and self.lambda_in >= 0 and self.lambda_out >= 0):
            raise InvalidInput("cost weights lambda_in and lambda_out must be finite and non-negative")

    def utility(self, f1: ArrayLike, c_in: ArrayLike, c_out: ArrayLike) -> NDArray[np.float64]:
        """`U = F1 - lambda_in * c_in - lambda_out * c_out` (normalized costs; F1, or a prediction of it)."""
        return (np.asarray(f1, dtype=np.float64) - self.lambda_in * np.asarray(c_in, dtype=np.float64)
                - self.lambda_out * np.asarray(c_out, dtype=np.float64))

    def charge(self, c_in: ArrayLike, c_out: ArrayLike) -> NDArray[np.float64]:
        """What host calls with these normalized costs take from the utility."""
        return (self.lambda_in * np.asarray(c_in, dtype=np.float64)
                + self.lambda_out * np.asarray(c_out, dtype=np.float64))

    def to_dict(self) -> dict[str, float]:
        """`{"lambda_in": ..., "lambda_out": ...}`, the keys reports and lineages store."""
        return {"lambda_in": self.lambda_in, "lambda_out": self.lambda_out}


def pareto_utility(f1: ArrayLike, c_in: ArrayLike, c_out: ArrayLike,
                   weights: CostWeights = CostWeights()) -> NDArray[np.float64]:
    """`weights.utility` of observed F1, refused unless F1 is a fraction in [0, 1]."""
    scores = np.asarray(f1, dtype=np.float64)
    if not np.isfinite(scores).all() or (scores < 0).any() or (scores > 1).any():
        raise ValueError("F1 must be a fraction in [0, 1] (not a percentage)")
    return weights.utility(scores, c_in, c_out)


def boltzmann_target(utility: ArrayLike, tau: float = 1.0) -> NDArray[np.float64]:
    """`softmax(U / tau)` over the last axis (arms), computed stably (max subtracted)."""
    if tau <= 0:
        raise InvalidInput(f"tau must be positive, not {tau}")
    scaled = np.asarray(utility, dtype=np.float64) / tau
    if not np.isfinite(scaled).all():
        raise ValueError("utilities must be finite")
    shifted = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def oracle_actions(utility: ArrayLike) -> NDArray[np.int64]:
    """The utility-maximizing arm per row; ties go to the lowest action index."""
    values = np.asarray(utility, dtype=np.float64)
    return np.argmax(values, axis=-1).astype(np.int64)  # argmax returns the first maximum


ORACLE_TOLERANCE = 1e-9  # arms within this of the best utility are all oracle arms (ties are common)


def oracle_sets(utility: ArrayLike, tolerance: float = ORACLE_TOLERANCE) -> NDArray[np.bool_]:
    """Per row, which arms are oracle arms: every arm within `tolerance` of the row's best utility.

    The oracle is a set, not one arm: when every arm scores F1 0, or Summary ties Raw, several arms
    are best, and counting agreement with one of them by a tie rule says nothing about routing.
    """
    values = np.asarray(utility, dtype=np.float64)
    return values >= values.max(axis=-1, keepdims=True) - tolerance


def regret(utility: ArrayLike, actions: ArrayLike) -> NDArray[np.float64]:
    """Per row, the oracle's utility minus the utility of the arm `actions` chose (never negative)."""
    values = np.asarray(utility, dtype=np.float64)
    chosen = np.take_along_axis(values, np.asarray(actions, dtype=np.int64)[..., None], axis=-1)[..., 0]
    return values.max(axis=-1) - chosen
