"""Cost-conditioned routers: one router for every cost weight pair.

The cost weights (lambda_in, lambda_out) are inputs of the router: each weight is clipped to the
trained range [low, high] and log-scaled onto [-spread, spread],

    w(lambda) = spread * (2 * (log clip(lambda) - log low) / (log high - log low) - 1),

and the two columns follow the standardized features. With spread 6 the two weight inputs stand out
against the few hundred feature columns (spread 1 left the Lite router 0.006 below the per-weight
one at 0.6/0.6 in crossfit on the demo store; 6 brought it within 0.005). Training sees each training query at
weight pairs drawn log-uniformly over [low, high] (lambda_in and lambda_out independently,
a seeded draw per copy), each copy with its utility row `U = F1 - lambda_in c_in - lambda_out c_out`
at its own pair. Stage 1 distils the Boltzmann target of every copy, with fresh draws each epoch
(each query is seen `draws` times an epoch, each time at new weights); Stage 2 replays the rewards
of `fixed_draws` seeded copies per query. The dev rows are expanded with `fixed_draws` seeded
copies, fixed across epochs, so early stopping and selection compare like with like. A conditioned
router then decides at whatever weights it is given, with no retraining; weights outside the range
(0 included) are read as the nearest trained weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from forge_core.errors import InvalidInput
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.routing.utility import CostNormalizer, CostWeights

WEIGHT_COLUMNS = ("lambda_in", "lambda_out")  # the router inputs after the features


@dataclass(frozen=True)
class CostConditioning:
    """The trained weight range of a cost-conditioned router and how densely it is sampled."""

    low: float = 0.02  # smallest trained weight (each of lambda_in, lambda_out)
    high: float = 3.0  # largest trained weight
    spread: float = 6.0  # the weight inputs span [-spread, spread]
    draws: int = 1  # Stage 1: weight pairs each training query is seen at per epoch (fresh each epoch)
    fixed_draws: int = 8  # seeded weight pairs per dev query, and per training query in Stage 2's replay

    def __post_init__(self) -> None:
        if not 0 < self.low < self.high or not np.isfinite(self.high):
            raise InvalidInput(f"the weight range needs 0 < low < high, not [{self.low}, {self.high}]")
        if not (np.isfinite(self.spread) and self.spread > 0):
            raise InvalidInput(f"spread must be positive, not {self.spread}")
        if min(self.draws, self.fixed_draws) < 1:
            raise InvalidInput(f"draws must be at least 1, not {min(self.draws, self.fixed_draws)}")

    def encode(self, lambda_in: ArrayLike, lambda_out: ArrayLike) -> NDArray[np.float32]:
        """[n, 2] router inputs of the weight pairs (scalars give one row)."""
        pairs = np.column_stack(np.broadcast_arrays(np.atleast_1d(lambda_in), np.atleast_1d(lambda_out)))
        logs = np.log(np.clip(pairs.astype(np.float64), self.low, self.high))
        scaled = 2.0 * (logs - np.log(self.low)) / (np.log(self.high) - np.log(self.low)) - 1.0
        return (self.spread * scaled).astype(np.float32)

    def inputs(self, x: np.ndarray, weights: CostWeights) -> np.ndarray:
        """Standardized features [n, d] followed by the weight columns of one pair: [n, d + 2]."""
        columns = np.repeat(self.encode(weights.lambda_in, weights.lambda_out), len(x), axis=0)
        return np.hstack([np.asarray(x, dtype=np.float32), columns])

    def draw(self, n: int, seed: int | Sequence[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """`n` weight pairs drawn log-uniformly over [low, high], each weight independently; `seed` is
        an int or a sequence of ints such as [seed, stream] (anything `np.random.default_rng` takes)."""
        rng = np.random.default_rng(seed)
        logs = rng.uniform(np.log(self.low), np.log(self.high), size=(2, n))
        return np.exp(logs[0]), np.exp(logs[1])

    def expand(self, x: np.ndarray, f1: np.ndarray, c_in: np.ndarray, c_out: np.ndarray, seed: int | Sequence[int],
               copies: int) -> tuple[np.ndarray, np.ndarray]:
        """The conditioned training rows of queries with features x [n, d], F1 [n, K] and
        normalized costs [n, K]: each query `copies` times, at its own drawn weight pair, as inputs
        [n * copies, d + 2] and utilities [n * copies, K] (query-major: copies of a query adjacent);
        `seed` as in `draw` (an int, or e.g. [seed, stream])."""
        lambda_in, lambda_out = self.draw(len(x) * copies, seed)
        rows = np.repeat(np.arange(len(x)), copies)
        inputs = np.hstack([np.asarray(x, dtype=np.float32)[rows], self.encode(lambda_in, lambda_out)])
        utility = f1[rows] - lambda_in[:, None] * c_in[rows] - lambda_out[:, None] * c_out[rows]
        return inputs, utility

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the checkpoint lineage's `conditioning`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> CostConditioning:
        """Rebuild from `to_dict` output."""
        return cls(float(record["low"]), float(record["high"]), float(record["spread"]), int(record["draws"]),
                   int(record["fixed_draws"]))


def conditioned_rows(conditioning: CostConditioning, x: np.ndarray, table: OutcomeTable, normalizer: CostNormalizer,
                     rows: np.ndarray, seed: int | Sequence[int], copies: int) -> tuple[np.ndarray, np.ndarray]:
    """`CostConditioning.expand` of the table's `rows` (standardized features `x` of every row of
    the table), costs normalized by `normalizer`; `seed` is an int or a sequence such as the
    trainer's [seed, stream]."""
    c_in, c_out = normalizer.transform(table.tokens_in[rows], table.tokens_out[rows])
    return conditioning.expand(x[rows], table.f1[rows], c_in, c_out, seed, copies)
