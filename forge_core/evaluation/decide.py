"""The decision at any cost weights, from out-of-fold decisions, without a new run per weight pair.

The out-of-fold decisions come from the folds of the newest Stage-1 crossfit run that trained the
cost-conditioned routers (`forge_core.evaluation.fold_decisions`: its fold routers trained once,
then deciding at any weights), beside the fixed arms and the linear floor `ridge_utility`. The rule:

1. The best fixed arm is the fixed arm of highest out-of-fold macro utility.
2. Candidates: every fixed arm, and each conditioned router whose utility gain over the best fixed
   arm has its paired-bootstrap 95% interval above zero (the paper's dev fallback rule: a router
   only where it decidably pays).
3. The leader is the candidate of highest macro utility. Among the candidates whose paired
   difference from the leader is not decidable (its interval contains 0), the cheapest (fewest
   tokens a query) is deployed, and the decision says so.

Each decision is kept as JSON under the run id, accounting and weights (`cached_file`), so the same
question is answered again in well under a second, without importing torch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from forge_core.errors import MissingStep
from forge_core.evaluation.file_cache import cached_file
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, evaluated_retriever_hash
from forge_core.policies.kinds import FIXED_ARM_KIND
from forge_core.routing.utility import CostWeights, check_accounting
from forge_core.statistics import benchmark_masks, paired_bootstrap_cis
from forge_core.store import Store

if TYPE_CHECKING:
    from forge_core.policies.context import EvalContext

DECISION_VERSION = 1  # layout of a cached decision: bump when it changes
FLOOR_POLICY = "ridge_utility"  # the linear floor (`forge_core.evaluation.crossfit.FLOOR_POLICY`)
CONDITIONED_VARIANTS = {"forge_lite_cond": "lite", "forge_full_cond": "full"}  # the registry's ConditionedRouter


def conditioned_run(store: Store, host: str, retriever: str = DEFAULT_RETRIEVER) -> tuple[str, dict]:
    """The newest finished Stage-1 crossfit run of the host under the retriever (its configuration
    hash) that trained the cost-conditioned routers, with its stored settings; refuses, naming the
    command that makes one, when none is."""
    evidence = evaluated_retriever_hash(store, host, retriever)
    runs = store.crossfit_runs(host)
    for run_id, stored, folds, done in zip(runs["run_id"], runs["settings"], runs["folds"], runs["folds_done"]):
        settings = json.loads(stored)
        if (done >= folds and settings.get("conditioning") and settings["stage"] == 1
                and settings.get("retriever_hash", "") == evidence):
            return str(run_id), settings
    option = "" if retriever == DEFAULT_RETRIEVER else f" --retriever {retriever}"
    raise MissingStep(f"no finished Stage-1 crossfit run of host '{host}' under retriever '{retriever}' with the "
                      f"cost-conditioned routers: run `forge eval crossfit --host {host}{option}` "
                      "(about a minute on the demo store)")


# ---------------------------------------------------------------- the rule


GAIN_KEYS = ("utility", "f1", "tokens_in", "tokens_out")  # each policy's gains over the best fixed arm


def decide_from_outcomes(outcomes: pd.DataFrame) -> dict:
    """The decision from per-(policy, query) outcomes (columns policy, kind, row, benchmark, f1,
    utility, tokens_in, tokens_out; every policy on the same rows): see the module docstring. Every
    policy's macro values and intervals are returned beside it."""
    names, first, values, benchmarks = _by_policy(outcomes)
    masks = benchmark_masks(benchmarks)
    means = {key: np.mean([rows[:, mask].mean(axis=1) for mask in masks], axis=0) for key, rows in values.items()}
    fixed = [name for name in names if first.at[name, "kind"] == FIXED_ARM_KIND]
    best = names.index(max(fixed, key=lambda name: means["utility"][names.index(name)]))
    floor = names.index(FLOOR_POLICY) if FLOOR_POLICY in names else None
    compared = [(key, best) for key in GAIN_KEYS] + ([("utility", floor)] if floor is not None else [])
    intervals = _intervals(np.concatenate([values[key] - values[key][other] for key, other in compared]), benchmarks)
    gains, to_floor = intervals[:len(GAIN_KEYS) * len(names)], intervals[len(GAIN_KEYS) * len(names):]
    policies = {}
    for i, name in enumerate(names):
        row = {"kind": first.at[name, "kind"], "macro_utility": float(means["utility"][i]),
               "macro_f1": float(means["f1"][i]), "tokens_in": float(means["tokens_in"][i]),
               "tokens_out": float(means["tokens_out"][i])}
        row["tokens"] = row["tokens_in"] + row["tokens_out"]
        row["gain_vs_best_fixed"] = {key: {"difference": float(means[key][i] - means[key][best]),
                                           "ci": gains[k * len(names) + i]} for k, key in enumerate(GAIN_KEYS)}
        if floor is not None and name != FLOOR_POLICY:
            row["vs_floor"] = {"difference": float(means["utility"][i] - means["utility"][floor]), "ci": to_floor[i]}
        policies[name] = row
    routers = [name for name in names if name not in fixed and name != FLOOR_POLICY]
    candidates = fixed + [name for name in routers if policies[name]["gain_vs_best_fixed"]["utility"]["ci"][0] > 0]
    leader = max(candidates, key=lambda name: policies[name]["macro_utility"])
    utilities = values["utility"][[names.index(name) for name in candidates]]
    to_leader = _intervals(utilities - values["utility"][names.index(leader)], benchmarks)
    tied = [name for name, interval in zip(candidates, to_leader) if name == leader or _undecidable(interval)]
    deploy = min(tied, key=lambda name: (policies[name]["tokens"], name != leader))
    return {"deploy": deploy, "leader": leader, "tied_with_leader": tied, "best_fixed_policy": names[best],
            "best_fixed_arm": first.at[names[best], "arm"],
            "deploy_arm": first.at[deploy, "arm"] if deploy in fixed else None,
            "router_candidates": [name for name in candidates if name in routers],
            "queries": int(len(benchmarks)), "policies": policies}


def _by_policy(outcomes: pd.DataFrame) -> tuple[list[str], pd.DataFrame, dict[str, np.ndarray], np.ndarray]:
    """The policies in order of appearance, each one's first row (its kind and arm), each of
    `GAIN_KEYS` as a (policies x queries) matrix with the queries in row order, and their benchmarks."""
    names = list(pd.unique(outcomes["policy"]))
    codes = pd.Categorical(outcomes["policy"], categories=names).codes
    ordered = outcomes.iloc[np.lexsort((outcomes["row"].to_numpy(), codes))]
    queries = len(ordered) // len(names)
    values = {key: ordered[key].to_numpy(dtype=np.float64).reshape(len(names), queries) for key in GAIN_KEYS}
    return names, ordered.iloc[::queries].set_index("policy"), values, ordered["benchmark"].to_numpy()[:queries]


def _intervals(differences: np.ndarray, benchmarks: np.ndarray) -> list[list[float]]:
    """The paired bootstrap interval of each row of `differences` (one policy each), as JSON lists."""
    return paired_bootstrap_cis(differences, benchmarks).tolist()


def _undecidable(interval: list[float]) -> bool:
    return interval[0] <= 0 <= interval[1]


# ---------------------------------------------------------------- the request


def decision_file(cache_dir: Path, run_id: str, weights: CostWeights, accounting: str) -> Path:
    """Where one decision is kept."""
    name = f"{run_id}.{accounting}.{weights.lambda_in!r}_{weights.lambda_out!r}.v{DECISION_VERSION}.json"
    return Path(cache_dir) / "decide" / name


def decide(store: Store, host: str, weights: CostWeights, cache_dir: Path, accounting: str = "deploy",
           on_fold: Callable[[int, int], None] | None = None, retriever: str = DEFAULT_RETRIEVER,
           context_for: Callable[[dict], EvalContext] | None = None, run: tuple[str, dict] | None = None) -> dict:
    """The decision at `weights` for `host` under `retriever`'s evidence (see the module
    docstring), with the checkpoint to deploy and its serve command; computed once per (run,
    accounting, weights) and kept in `cache_dir` (a run under another retriever has another id).
    `on_fold(done, total)` follows the one-off training of the fold routers. `context_for`: given
    the run's stored settings, its `fold_decisions.decision_context` under `accounting`, kept by the
    caller (the dashboard's slider steps then load outcomes and features once); `run`, the
    `conditioned_run` of the host and retriever when the caller keeps it."""
    check_accounting(accounting)
    run_id, settings = run or conditioned_run(store, host, retriever)

    def compute() -> dict:
        from forge_core.evaluation.fold_decisions import out_of_fold_outcomes  # torch: only when computing
        from forge_core.training.threads import one_thread

        outcomes, reproduced = out_of_fold_outcomes(store, run_id, settings, weights, accounting, cache_dir, on_fold,
                                                    context_for(settings) if context_for else None)
        with one_thread():
            return {**decide_from_outcomes(outcomes), "reproduced_share": reproduced}

    result = cached_file(decision_file(cache_dir, run_id, weights, accounting), compute,
                         lambda path: json.loads(path.read_text()),
                         lambda path, value: path.write_text(json.dumps(value)))
    return _named(store, host, settings, run_id, weights, accounting, result)


def _named(store: Store, host: str, settings: dict, run_id: str, weights: CostWeights, accounting: str,
           result: dict) -> dict:
    """The decision with what to deploy named: the stored conditioned checkpoint of the decided
    router's variant (or the fixed arm), its `forge serve` command and a sentence."""
    deploy = result["deploy"]
    variant = CONDITIONED_VARIANTS.get(deploy)
    checkpoint = None
    if variant is not None:
        from forge_core.policies.conditioned import conditioned_checkpoint  # torch: only for a router

        checkpoint = conditioned_checkpoint(store, host, variant, settings["n_arms"],
                                            split_seed=settings["split_seed"], seed=settings["seed"],
                                            retriever_hash=settings.get("retriever_hash", ""))
    retriever = settings.get("retriever", DEFAULT_RETRIEVER)
    evidence = "" if retriever == DEFAULT_RETRIEVER else f" --retriever {retriever}"
    lambdas = f"--lambda-in {weights.lambda_in:g} --lambda-out {weights.lambda_out:g}"
    if variant is None:
        command = f"forge serve --host {host}{evidence} --arm {result['deploy_arm']}"
    elif checkpoint is None:
        command = (f"forge train --host {host}{evidence} --conditioned --variant {variant}  "
                   f"# then: forge decide{evidence} {lambdas}")
    else:
        command = f"forge serve --host {host}{evidence} --router {checkpoint} {lambdas}"
    ask = f"forge ask --host {host}{evidence} " + (f"--arm {result['deploy_arm']}" if variant is None else
                                                   f"--route --router {checkpoint}") + ' "QUESTION"'
    decided = {"host": host, "retriever": retriever, **weights.to_dict(), "accounting": accounting, "run_id": run_id,
               "folds": settings["folds"], **result, "checkpoint_id": checkpoint, "variant": variant,
               "serve_command": command, "ask_command": ask if variant is None or checkpoint else None}
    decided["sentence"] = decision_sentence(decided)
    return decided


def decision_sentence(decided: dict) -> str:
    """One or two lines: what to deploy, its gain over the best fixed arm, the floor, and why."""
    row = decided["policies"][decided["deploy"]]
    gain = row["gain_vs_best_fixed"]["utility"]
    low, high = gain["ci"]
    what = decided["checkpoint_id"] or decided["deploy"]
    text = (f"Deploy {decided['deploy']}" + (f" (checkpoint {what})" if decided["checkpoint_id"] else "")
            + f" at λ_in {decided['lambda_in']:g} / λ_out {decided['lambda_out']:g}: "
            + f"{gain['difference']:+.3f} utility [{low:+.3f}, {high:+.3f}] over {decided['best_fixed_arm']}")
    if decided["deploy"] != decided["leader"]:
        text += (f"; {decided['leader']} has the highest utility but the difference is not decidable, so the cheaper "
                 f"({row['tokens']:,.0f} tokens a query against "
                 f"{decided['policies'][decided['leader']]['tokens']:,.0f}) is preferred")
    if not decided["router_candidates"]:
        text += "; no conditioned router beats the best fixed arm decidably"
    return text + "."


def floor_verdict(vs_floor: dict) -> str:
    """How the deployed policy stands against the floor, from its paired 95% interval: "decidably
    above", "decidably below" or "not decidably different from"."""
    low, high = vs_floor["ci"]
    return "decidably above" if low > 0 else "decidably below" if high < 0 else "not decidably different from"


def decision_json(decided: dict) -> dict:
    """The JSON output of `forge decide`: the decision, its gains with intervals, the floor."""
    row = decided["policies"][decided["deploy"]]
    floor = row.get("vs_floor")
    return {key: decided[key] for key in (
        "host", "retriever", "lambda_in", "lambda_out", "accounting", "deploy", "checkpoint_id", "variant",
        "deploy_arm", "best_fixed_policy", "best_fixed_arm", "leader", "tied_with_leader", "router_candidates",
        "serve_command", "ask_command",
        "run_id", "folds", "queries", "reproduced_share", "sentence")} | {
        "gain": row["gain_vs_best_fixed"],
        "macro_utility": row["macro_utility"], "macro_f1": row["macro_f1"],
        "tokens_in": row["tokens_in"], "tokens_out": row["tokens_out"],
        "floor_policy": FLOOR_POLICY, "vs_floor": floor,
        "decidably_above_floor": bool(floor is not None and floor["ci"][0] > 0),
        "floor_verdict": floor_verdict(floor) if floor is not None else None,
        "policies": decided["policies"]}
