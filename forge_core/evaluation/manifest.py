"""A deployment manifest: what `forge decide` recommends, bound to the evidence it rests on, so
`forge serve --manifest` serves exactly it and refuses a store where it no longer holds.

It names the policy (a fixed arm, or a router's checkpoint), the recipe identity, the crossfit runs
whose out-of-fold rows decided it, the weights, accounting and budget, the data version (a hash of
the outcomes evaluated), the code version, and the gain over the best fixed arm and the floor with
their 95% intervals.
"""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from forge_core.errors import InvalidInput
from forge_core.evaluation.decide import FLOOR_POLICY, floor_verdict
from forge_core.evaluation.file_cache import write_text_atomically
from forge_core.evaluation.recipe import Recipe, recipe_checkpoints
from forge_core.identity import canonical_hash
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

MANIFEST_VERSION = 1  # layout of a manifest: bump when it changes
POLICY_KEYS = ("kind", "arm", "macro_utility", "macro_f1", "tokens", "tokens_ci")  # per policy, in the manifest


def data_version(store: Store, host: str, n_arms: int, retriever_hash: str) -> str:
    """A hash of the outcomes a decision evaluates (the complete queries with probes, as every
    protocol reads them): it changes when the store's outcomes do."""
    from forge_core.policies.context import evaluation_context

    return evaluation_context(store, host, n_arms, CostWeights(), retriever_hash=retriever_hash).table.data_hash()[:16]


def code_version() -> str:
    """The package version, with the git commit when the code runs from a checkout."""
    version = metadata.version("forge-core")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+{commit}"


def decision_manifest(decided: dict, data: str) -> dict[str, Any]:
    """The manifest of a decision (`decide.decide`'s result) on data of version `data`; it is
    also `forge decide --json`'s output."""
    row = decided["policies"][decided["deploy"]]
    floor = row.get("vs_floor")
    return {
        "manifest_version": MANIFEST_VERSION,
        "policy": decided["deploy"], "arm": decided["deploy_arm"], "checkpoint_id": decided["checkpoint_id"],
        "variant": decided["variant"], "conditioned": decided["conditioned"],
        "trains_first": decided["trains_first"], "serve_command": decided["serve_command"],
        "ask_command": decided["ask_command"], "sentence": decided["sentence"],
        "deploy_mix": decided.get("deploy_mix"), "guard": decided.get("guard"),
        "host": decided["host"], "retriever": decided["retriever"],
        "lambda_in": decided["lambda_in"], "lambda_out": decided["lambda_out"],
        "accounting": decided["accounting"], "budget_tokens": decided["budget_tokens"],
        "weights_from_budget": decided.get("weights_from_budget"),
        "recipe": decided["recipe"], "recommended_recipe": decided["recommended_recipe"],
        "recipe_measured": decided["recipe_measured"],
        "evidence": decided["evidence"], "crossfit_run_ids": decided["run_ids"], "queries": decided["queries"],
        "reproduced_share": decided["reproduced_share"],
        "data_version": data, "code_version": code_version(),
        "best_fixed_policy": decided["best_fixed_policy"], "best_fixed_arm": decided["best_fixed_arm"],
        "leader": decided["leader"], "tied_with_leader": decided["tied_with_leader"],
        "router_candidates": decided["router_candidates"], "challenger": decided["challenger"],
        "gain": row["gain_vs_best_fixed"], "macro_utility": row["macro_utility"], "macro_f1": row["macro_f1"],
        "tokens": row["tokens"], "tokens_ci": row["tokens_ci"],
        "floor_policy": FLOOR_POLICY, "vs_floor": floor,
        "floor_verdict": floor_verdict(floor) if floor is not None else None,
        "excluded": decided["excluded"], "over_budget": decided["over_budget"], "mix": decided.get("mix"),
        "policies": {name: {key: policy[key] for key in POLICY_KEYS} | {"gain": policy["gain_vs_best_fixed"]}
                     for name, policy in decided["policies"].items()},
    }


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write a manifest as JSON, atomically."""
    write_text_atomically(path, json.dumps(manifest, indent=1))


def read_manifest(path: Path) -> dict[str, Any]:
    """A manifest file, refused in one line when it is not one."""
    try:
        manifest = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InvalidInput(f"cannot read the manifest {path}: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
        raise InvalidInput(f"{path} is not a FORGE deployment manifest (version {MANIFEST_VERSION}): write one with "
                           "`forge decide ... --json > FILE`")
    return manifest


def manifest_problems(store: Store, manifest: dict[str, Any]) -> list[str]:
    """What no longer holds of a manifest in this store (empty: it all holds): its crossfit runs
    finished, its data version, its checkpoint stored and of its recipe."""
    from forge_core.evidence.retrievers import evaluated_retriever_hash

    problems = []
    host = manifest["host"]
    runs = store.crossfit_runs(host)
    finished = set(runs[runs["folds_done"] >= runs["folds"]]["run_id"])
    problems += [f"crossfit run {run_id} is not in this store" for run_id in manifest["crossfit_run_ids"]
                 if run_id not in finished]
    recipe = manifest["recipe"]
    current = data_version(store, host, recipe["n_arms"], evaluated_retriever_hash(store, host, manifest["retriever"]))
    if current != manifest["data_version"]:
        problems.append(f"the host's outcomes changed since the decision (data version {current}, the manifest's "
                        f"{manifest['data_version']})")
    checkpoint = manifest["checkpoint_id"]
    if checkpoint is not None:
        problems += _checkpoint_problems(store, host, manifest)
    elif manifest["variant"] is not None and not manifest.get("deploy_mix"):
        problems.append(f"the decided router has no checkpoint: `{manifest['serve_command']}`, then decide again")
    return problems


def _checkpoint_problems(store: Store, host: str, manifest: dict[str, Any]) -> list[str]:
    """Whether the manifest's checkpoint is stored and of the manifest's recipe, variant and weights."""
    checkpoints = store.checkpoints(host)
    checkpoint = manifest["checkpoint_id"]
    if checkpoint not in set(checkpoints["checkpoint_id"]):
        return [f"checkpoint {checkpoint} is not in this store"]
    recipe = Recipe(**{key: value for key, value in manifest["recipe"].items() if key not in ("recipe_id", "label")})
    weights = None if manifest["conditioned"] else CostWeights(manifest["lambda_in"], manifest["lambda_out"])
    if checkpoint in recipe_checkpoints(checkpoints, recipe, manifest["variant"], weights):
        return []
    return [f"checkpoint {checkpoint} is not a {manifest['variant']} router of the manifest's recipe "
            f"{recipe.recipe_id}"]


def manifest_id(manifest: dict[str, Any]) -> str:
    """A short id of a manifest's content (what the traffic log and /health name it by)."""
    return "manifest-" + canonical_hash("manifest", MANIFEST_VERSION, manifest)[:12]


def manifest_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    """What /health, the traffic log and the Traffic page show of a manifest."""
    return {"manifest_id": manifest_id(manifest), "policy": manifest["policy"], "arm": manifest["arm"],
            "checkpoint_id": manifest["checkpoint_id"], "recipe_id": manifest["recipe"]["recipe_id"],
            "recipe": manifest["recipe"]["label"], "lambda_in": manifest["lambda_in"],
            "lambda_out": manifest["lambda_out"], "budget_tokens": manifest["budget_tokens"],
            "crossfit_run_ids": manifest["crossfit_run_ids"], "data_version": manifest["data_version"],
            "code_version": manifest["code_version"], "gain": manifest["gain"]["utility"],
            "sentence": manifest["sentence"]}


def serve_settings_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """What `forge serve` takes from a manifest: host, retriever, and the mix of fixed arms it
    deploys (`deploy_mix`), the fixed arm, or the router with its weights and its guard's risk (None: unguarded)."""
    served = {"host": manifest["host"], "retriever": manifest["retriever"], "mix": None}
    if manifest.get("deploy_mix"):
        return served | {"mix": manifest["deploy_mix"], "arm": None, "router": None, "lambda_in": None,
                         "lambda_out": None}
    if manifest["arm"] is not None:
        return served | {"arm": manifest["arm"], "router": None, "lambda_in": None, "lambda_out": None}
    return served | {"arm": None, "router": manifest["checkpoint_id"], "lambda_in": manifest["lambda_in"],
                     "lambda_out": manifest["lambda_out"], "guard": manifest.get("guard")}
