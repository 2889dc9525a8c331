"""Router checkpoints: weights plus everything needed to use and trace them.

A checkpoint carries the router's spec and weights, the feature standardizer and the cost
normalizer it was trained with, and a lineage record: a hash of the training data snapshot,
host, feature variant and names, lambdas, tau, seeds, stage, algorithm and parent checkpoint.
Weights are serialized with `torch.save` and always loaded with `weights_only=True`, checked
against their sha256 and validated against the spec before use.

A checkpoint's id is a function of what the user controls (its lineage without the values
measured from the data, and `RECIPE_VERSION`), so the same request on the same data has the
same id on every machine, whatever its floating-point path does to the weights.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from forge_core.errors import ForgeError
from forge_core.identity import canonical_hash
from forge_core.routing.conditioning import WEIGHT_COLUMNS, CostConditioning
from forge_core.routing.features import Standardizer

if TYPE_CHECKING:  # torch is imported by the functions that load, save or run weights: reading records needs none
    from forge_core.routing.routers import Router
from forge_core.routing.utility import CostNormalizer, CostWeights
from forge_core.store import Store


class CheckpointError(ForgeError, ValueError):
    """A checkpoint that is missing, malformed or does not fit its spec (a user error: one line)."""


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A usable router with its preprocessing."""

    checkpoint_id: str
    router: Router
    standardizer: Standardizer
    normalizer: CostNormalizer
    record: dict[str, Any]
    conditioning: CostConditioning | None  # how a cost-conditioned router reads the weights; None: one weight pair

    @property
    def variant(self) -> str:
        """The feature variant the router reads (full, lite or bge)."""
        return self.record["variant"]

    @property
    def lineage(self) -> dict[str, Any]:
        """Where the checkpoint came from."""
        return self.record["lineage"]

    def router_inputs(self, features: np.ndarray, weights: CostWeights) -> np.ndarray:
        """The router's inputs for raw features [n, d]: standardized, and for a cost-conditioned
        router followed by the weight columns of `weights`; a router of one weight
        pair ignores the weights."""
        x = self.standardizer.transform(features)
        conditioning = self.conditioning
        return x if conditioning is None else conditioning.inputs(x, weights)

    def probabilities(self, features: np.ndarray, weights: CostWeights) -> np.ndarray:
        """[n, K] the router's action distribution on raw features [n, d] at these weights."""
        import torch

        with torch.no_grad():
            x = torch.as_tensor(self.router_inputs(features, weights))
            return self.router.log_probs(x).exp().numpy()


def conditioning_of(lineage: dict[str, Any]) -> CostConditioning | None:
    """The cost conditioning recorded in a lineage, or None (a router of one weight pair)."""
    record = lineage.get("conditioning")
    return None if record is None else CostConditioning.from_dict(record)


RECIPE_VERSION = 1  # bump when training code changes what the same lineage trains (ids change with it)
# lineage values measured from the data (feature means, token maxima): they follow the machine's
# floating-point path and the data snapshot, so they are recorded but not part of the id
MEASURED_LINEAGE_KEYS = ("standardizer", "normalizer")


def checkpoint_id_for(lineage: dict[str, Any]) -> str:
    """The id of the checkpoint a lineage describes: a hash of the lineage's chosen values (data
    snapshot, host, variant, feature names, weights, seeds, stage configs, parent) and the recipe
    version, identical across machines."""
    identity = {key: value for key, value in lineage.items() if key not in MEASURED_LINEAGE_KEYS}
    return "ckpt-" + canonical_hash("checkpoint", RECIPE_VERSION, identity)[:12]


def save_checkpoint(store: Store, router: Router, record: dict[str, Any]) -> str:
    """Serialize the router's weights and store them with `record` (stage, host, variant,
    n_arms, parent, lineage, metrics, training_log) and their sha256; returns the checkpoint id.
    A checkpoint already stored under the id is kept (the first training of a lineage stays)."""
    import torch

    buffer = io.BytesIO()
    torch.save(router.state_dict(), buffer)
    state = buffer.getvalue()
    checkpoint_id = checkpoint_id_for(record["lineage"])
    store.save_checkpoint({**record, "checkpoint_id": checkpoint_id}, state)
    return checkpoint_id


def load_checkpoint(store: Store, checkpoint_id: str) -> LoadedCheckpoint:
    """Load and validate a checkpoint (weights only: no pickled code is ever executed)."""
    import torch

    from forge_core.routing.routers import build_router

    found = store.checkpoint(checkpoint_id)
    if found is None:
        raise CheckpointError(f"no checkpoint '{checkpoint_id}' (see `forge checkpoints`)")
    record, state_bytes = found
    if record["weights_sha256"] is not None and hashlib.sha256(state_bytes).hexdigest() != record["weights_sha256"]:
        raise CheckpointError(f"checkpoint '{checkpoint_id}' is damaged: its weights do not match their sha256")
    lineage = record["lineage"]
    try:
        state = torch.load(io.BytesIO(state_bytes), weights_only=True)
        router = build_router(lineage["router"], lineage["input_dim"], record["n_arms"])
        router.load_state_dict(state, strict=True)
        standardizer = Standardizer.from_dict(lineage["standardizer"])
        normalizer = CostNormalizer.from_dict(lineage["normalizer"])
        conditioning = conditioning_of(lineage)
    except (KeyError, RuntimeError, ValueError, TypeError, pickle.UnpicklingError) as error:
        raise CheckpointError(f"checkpoint '{checkpoint_id}' is invalid: {error}") from None
    extra = 0 if conditioning is None else len(WEIGHT_COLUMNS)
    if standardizer.embedding_dim + len(standardizer.mean) + extra != lineage["input_dim"]:
        raise CheckpointError(f"checkpoint '{checkpoint_id}': standardizer does not match the input size")
    router.eval()
    return LoadedCheckpoint(checkpoint_id, router, standardizer, normalizer, record, conditioning)


def other_host_warning(checkpoint_id: str, trained_on: str, host: str) -> str | None:
    """A one-line warning when a router trained on one host routes another host's questions (its
    allocation was learnt on what the other host knows), with the commands that measure and fix it;
    None when the hosts are the same."""
    if trained_on == host:
        return None
    return (f"router {checkpoint_id} was trained on host '{trained_on}', not '{host}': its arm choices may be wrong "
            f"here; measure with `forge eval transfer --from {trained_on} --to {host}`, add `--calibrate 50` "
            f"for a router calibrated on {host}")


def default_router(store: Store, host: str) -> str | None:
    """The host's default router: the checkpoint the user marked (`Store.marked_default_router`),
    else its newest cost-conditioned Lite checkpoint (it decides at whatever weights are asked),
    else its newest Lite checkpoint (which a new run takes over until a mark is set); None
    without any."""
    return (store.marked_default_router(host) or latest_checkpoint(store, host, "lite", conditioned=True)
            or latest_checkpoint(store, host, "lite"))


def latest_checkpoint(store: Store, host: str, variant: str, stage: int | None = None,
                      n_arms: int | None = None, conditioned: bool = False, retriever_hash: str = "") -> str | None:
    """The newest checkpoint id matching the filters, or None: among the routers of one weight
    pair, or with `conditioned` among the cost-conditioned ones, trained under one retriever
    configuration (its hash; "": the default BM25 evidence)."""
    filters = {name: value for name, value in (("stage", stage), ("n_arms", n_arms)) if value is not None}
    found = store.find_checkpoints(host, retriever_hash, variant=variant, **filters)
    found = found[found["conditioned"] == conditioned]
    return None if found.empty else str(found["checkpoint_id"].iloc[0])


def _lineage_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint row's lineage: a JSON column value (str) or an already decoded dict."""
    value = row.get("lineage")
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


VARIANT_NAMES = {"lite": "Lite", "full": "Full", "bge": "BGE+BM25"}
SHORT_ID_CHARS = 6


def short_id(checkpoint_id: str) -> str:
    """A checkpoint id shortened for display, e.g. "ckpt-bde3f7" for "ckpt-bde3f711753e"."""
    return "ckpt-" + checkpoint_id.removeprefix("ckpt-")[:SHORT_ID_CHARS]


def checkpoint_name(row: Mapping[str, Any]) -> str:
    """The one name of a checkpoint on every page: variant, "cond." for a cost-conditioned router
    (it decides at any weights), stage, the weights a per-weight router was trained at, and its
    short id, e.g. "Lite cond. stage 1 · ckpt-bde3f7" or "Full stage 2 · λ 0.1/0.2 · ckpt-d124d1"."""
    lineage = _lineage_of(row)
    head = VARIANT_NAMES.get(row["variant"], str(row["variant"]))
    if lineage.get("conditioning") is not None:
        head += " cond."
    parts = [f"{head} stage {int(row['stage'])}"]
    if lineage.get("conditioning") is None and lineage.get("lambda_in") is not None:
        parts.append(f"λ {lineage['lambda_in']:g}/{lineage.get('lambda_out', 0.0):g}")
    parts.append(short_id(str(row["checkpoint_id"])))
    return " · ".join(parts)
