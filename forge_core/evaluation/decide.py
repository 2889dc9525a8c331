"""What to deploy at any cost weights: one rule over out-of-fold evidence of one recipe.

The evidence. A decision serves one recipe (`forge_core.evaluation.recipe`): the one asked for,
else the one the store's own runs measure best (`recipe_choice.recommended_recipe`), never the
newest. Where a finished crossfit run of that recipe is stored at the weights and accounting (the
lowest split seed's), its out-of-fold rows are the evidence and every policy it measured competes:
the fixed arms, the per-weight routers trained at those weights, the cost-conditioned routers and
the baselines. At other weights, the folds of the recipe's Stage-1 run with the cost-conditioned
routers decide again at those weights (`fold_decisions`): the fixed arms, the linear floor and the
conditioned routers.

The rule (`decide_from_outcomes`, the one function every view states its decision with):

1. Only what can be served competes: fixed arms (`forge serve --arm`), FORGE routers (a
   checkpoint) and their guards (`forge serve --guard`); every other policy is reported with the
   reason it is excluded. The oracle never.
2. With a token budget, only policies whose tokens a query are not decidably above it (the lower
   bound of their 95% interval at most the budget).
3. The best fixed arm is the remaining fixed arm of highest macro utility.
   Every exact tie in the rule goes to fewer tokens a query, then to the name, never to the order
   the policies are listed in (`forge_core.evaluation.deploy_rule`, which the crossfit report's
   best fixed arm and its `decidable` column read too).
4. Candidates: those fixed arms, and each router whose utility gain over the best fixed arm has its
   paired-bootstrap 95% interval above zero (the paper's dev fallback rule).
5. The leader is the candidate of highest macro utility. Among the candidates whose paired
   difference from the leader is not decidable (its interval contains 0), the cheapest (fewest
   tokens a query) is deployed, and the decision says so.
6. With a token budget, the reference is also the best mix of fixed arms that spends it (two arms
   at random per query, `forge_core.policies.mix_hull`): the mix is deployed unless the rule's choice
   is a router whose F1 gain over the mix has its paired 95% interval above zero. A one-arm mix is
   that fixed arm; a mix of two arms is served by `forge serve --mix ARM=SHARE,ARM=SHARE` (each
   question under the arm its hash draws, `forge_core.policies.arm_mix`), the decision's
   `deploy_mix` and serve command.

The checkpoint named is one of the same recipe (or the one command that trains it). Each rule's
result is kept as JSON in the cache directory, so the same question is answered again at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from forge_core.engines import DEFAULT_ENGINE
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evaluation import deploy_rule
from forge_core.evaluation.file_cache import cached_file
from forge_core.evaluation.recipe import STAGE1_PARENT_SUFFIX, Recipe, recipe_checkpoint
from forge_core.evaluation.recipe_choice import ROUTERS, MeasuredRecipe, measured_recipes, recommended_recipe
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, evaluated_retriever_hash
from forge_core.identity import canonical_hash
from forge_core.policies.arm_mix import mix_option
from forge_core.policies.guard import GUARD_SUFFIX, MIX_GUARD_SUFFIX, guarded_router
from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND
from forge_core.policies.mix_hull import ArmOutcomes, gains_over_best_mix
from forge_core.policies.registry import ConditionedRouter, TrainedRouter, variants
from forge_core.routing.checkpoints import checkpoint_name
from forge_core.routing.guard import GUARD_ALPHA
from forge_core.routing.utility import CostWeights, check_accounting
from forge_core.statistics import Interval, benchmark_masks, paired_bootstrap_cis
from forge_core.store import Store

if TYPE_CHECKING:
    from forge_core.policies.context import EvalContext

DECISION_VERSION = 6  # layout of a cached decision: bump when it changes
FLOOR_POLICY = "ridge_utility"  # the linear floor (`forge_core.evaluation.crossfit.FLOOR_POLICY`)
CONDITIONED_VARIANTS = variants(ConditionedRouter)  # policy name -> feature variant
ROUTER_VARIANTS = variants(TrainedRouter) | CONDITIONED_VARIANTS  # every servable router -> its checkpoints' variant
GAIN_KEYS = ("utility", "f1", "tokens")  # each policy's gains over the best fixed arm
RUN_TOLERANCE = 1e-9  # a stored run is at the asked weights when each differs by at most this


# ---------------------------------------------------------------- the rule


def served_router(name: str) -> str:
    """The router policy `forge serve` loads for a policy: a guarded router's own router
    (`forge serve --guard`), any other policy itself."""
    return guarded_router(name)


def exclusion_reason(name: str, kind: str) -> str | None:
    """Why `forge serve` cannot serve a policy (None: it can)."""
    if kind == FIXED_ARM_KIND or served_router(name) in ROUTER_VARIANTS:
        return None
    if name == FLOOR_POLICY:
        return "the linear floor: a ridge fit with no checkpoint format `forge serve` loads"
    if kind == ORACLE_KIND:
        return "the oracle: it sees every arm's score"
    if name.endswith("_fallback"):
        return "the dev fallback rule around a router: not a checkpoint `forge serve` loads"
    if name.endswith(GUARD_SUFFIX):
        return f"a guard around {served_router(name)}, which `forge serve` cannot serve: " + exclusion_reason(
            served_router(name), kind)
    return "a baseline from the literature: `forge serve` serves FORGE routers and fixed arms"


def decide_from_outcomes(outcomes: pd.DataFrame, budget_tokens: float | None = None) -> dict:
    """The decision from per-(policy, query) outcomes (columns policy, kind, row, benchmark, arm,
    f1, utility, tokens; every policy on the same rows): see the module docstring. Every policy's
    macro values and intervals are returned beside it, the excluded ones with their reason."""
    outcomes = outcomes[outcomes["kind"] != ORACLE_KIND]
    names, first, values, benchmarks = _by_policy(outcomes)
    masks = benchmark_masks(benchmarks)
    means = {key: np.mean([rows[:, mask].mean(axis=1) for mask in masks], axis=0) for key, rows in values.items()}
    token_cis = _intervals(values["tokens"], benchmarks)
    excluded = {name: why for name in names if (why := exclusion_reason(name, first.at[name, "kind"]))}
    within = [name for i, name in enumerate(names) if budget_tokens is None or token_cis[i][0] <= budget_tokens]
    fixed = [name for name in within if first.at[name, "kind"] == FIXED_ARM_KIND]
    if not fixed:
        cheapest = min(names, key=lambda name: means["tokens"][names.index(name)])
        raise InvalidInput(f"no fixed arm meets a budget of {budget_tokens:g} tokens a query (the cheapest policy, "
                           f"{cheapest}, spends {means['tokens'][names.index(cheapest)]:,.0f}): raise the budget")
    utility = dict(zip(names, means["utility"]))
    tokens = dict(zip(names, means["tokens"]))
    best = names.index(deploy_rule.best_fixed(fixed, utility, tokens))
    floor = names.index(FLOOR_POLICY) if FLOOR_POLICY in names else None
    compared = [(key, best) for key in GAIN_KEYS] + ([("utility", floor)] if floor is not None else [])
    intervals = _intervals(np.concatenate([values[key] - values[key][other] for key, other in compared]), benchmarks)
    policies = {name: _policy_row(i, name, first, means, intervals, token_cis[i], best, floor)
                for i, name in enumerate(names)}
    routers = [name for name in within if name not in excluded and name not in fixed]
    candidates = fixed + [name for name in routers if deploy_rule.beats_best_fixed(
        policies[name]["kind"], policies[name]["gain_vs_best_fixed"]["utility"]["ci"])]
    leader = deploy_rule.leader(candidates, utility, tokens)
    utilities = values["utility"][[names.index(name) for name in candidates]]
    to_leader = _intervals(utilities - values["utility"][names.index(leader)], benchmarks)
    tied = [name for name, interval in zip(candidates, to_leader)
            if name == leader or not Interval.of(interval).decided]
    deploy = deploy_rule.deployed_among(tied, leader, tokens)
    challenger = deploy_rule.leader(routers, utility, tokens) if routers else None
    decision = {"deploy": deploy, "leader": leader, "tied_with_leader": tied, "best_fixed_policy": names[best],
                "best_fixed_arm": first.at[names[best], "arm"],
                "deploy_arm": first.at[deploy, "arm"] if deploy in fixed else None,
                "router_candidates": [name for name in candidates if name in routers],
                "challenger": challenger, "excluded": excluded, "budget_tokens": budget_tokens,
                "over_budget": [name for name in names if name not in within],
                "queries": int(len(benchmarks)), "policies": policies}
    return _with_mix(decision, names, first, values, benchmarks, routers)


def _with_mix(decision: dict, names: list[str], first: pd.DataFrame, values: dict[str, np.ndarray],
              benchmarks: np.ndarray, routers: list[str]) -> dict:
    """The decision with, under `mix`, the best mix of every fixed arm at its token budget
    (`mix.gains_over_best_mix`; None without a budget, or below the cheapest arm's tokens) and each
    servable router's F1 gain over it within the budget. The mix is `deployed` unless the rule
    deploys a router decidably above it; a one-arm mix is then deployed as that fixed arm, and a
    two-arm mix as `forge serve --mix` (`deploy_mix`, its option; None when no two-arm mix is deployed)."""
    decision = {**decision, "deploy_mix": None}
    if decision["budget_tokens"] is None:
        return {**decision, "mix": None}
    fixed = [i for i, name in enumerate(names) if first.at[name, "kind"] == FIXED_ARM_KIND]
    arms = ArmOutcomes.of([first.at[names[i], "arm"] for i in fixed],
                          [pd.DataFrame({key: values[key][i] for key in ("f1", "tokens")}) for i in fixed], benchmarks)
    mix = gains_over_best_mix(arms, decision["budget_tokens"], {name: values["f1"][names.index(name)]
                                                                  for name in routers})
    if mix is None:
        return {**decision, "mix": None}
    router_above = decision["deploy"] in mix["gains"] and Interval.of(mix["gains"][decision["deploy"]]["ci"]).above
    mix |= {"deployed": not router_above, "servable": True}
    if mix["deployed"] and len(mix["arms"]) == 1:
        arm = mix["arms"][0]
        decision |= {"deploy": names[fixed[arms.names.index(arm)]], "deploy_arm": arm}
    elif mix["deployed"]:
        decision |= {"deploy_mix": mix_option(mix["arms"], mix["shares"])}
    return {**decision, "mix": mix}


def _policy_row(i: int, name: str, first: pd.DataFrame, means: dict[str, np.ndarray], intervals: list,
                token_ci: list[float], best: int, floor: int | None) -> dict:
    """One policy's macro values, its gains over the best fixed arm (`intervals`: every policy's
    gain per `GAIN_KEYS`, then its difference from the floor) and its difference from the floor."""
    count = len(means["utility"])
    row = {"kind": first.at[name, "kind"], "arm": first.at[name, "arm"], "macro_utility": float(means["utility"][i]),
           "macro_f1": float(means["f1"][i]), "tokens": float(means["tokens"][i]), "tokens_ci": token_ci}
    row["gain_vs_best_fixed"] = {key: {"difference": float(means[key][i] - means[key][best]),
                                       "ci": intervals[k * count + i]} for k, key in enumerate(GAIN_KEYS)}
    if floor is not None and name != FLOOR_POLICY:
        row["vs_floor"] = {"difference": float(means["utility"][i] - means["utility"][floor]),
                           "ci": intervals[len(GAIN_KEYS) * count + i]}
    return row


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
    return [list(interval) for interval in paired_bootstrap_cis(differences, benchmarks)]


# ---------------------------------------------------------------- the evidence


def recipe_runs(store: Store, host: str, recipe: Recipe, retriever_hash: str,
                measured: list[MeasuredRecipe] | None = None) -> list[MeasuredRecipe]:
    """The finished crossfit runs of the host that measured `recipe`, newest first (`measured`: the
    host's `measured_recipes` under the retriever and the recipe's embedder, when the caller has them)."""
    if measured is None:
        measured = measured_recipes(store, host, retriever_hash, recipe.embedder)
    return [m for m in measured if m.recipe.recipe_id == recipe.recipe_id]


def run_at_weights(runs: list[MeasuredRecipe], weights: CostWeights, accounting: str) -> MeasuredRecipe | None:
    """The run among `runs` at these weights and accounting, of the lowest split seed, a run of the
    recipe's own stage before a Stage-2 run's `_stage1` parents (the same routers); None when none is."""
    at = [m for m in runs if m.settings["accounting"] == accounting
          and abs(m.settings["lambda_in"] - weights.lambda_in) <= RUN_TOLERANCE
          and abs(m.settings["lambda_out"] - weights.lambda_out) <= RUN_TOLERANCE]
    return min(at, key=lambda m: (m.settings["split_seed"], m.suffix != ""), default=None)


def conditioned_anchor(runs: list[MeasuredRecipe]) -> MeasuredRecipe | None:
    """The recipe's Stage-1 run with the cost-conditioned routers whose folds decide at weights
    without a stored run (`fold_decisions`): one per recipe, whatever the weights asked, so its fold
    routers are trained once; the one stored nearest the default weights (log scale), of the lowest
    split seed, never chosen by date. None when there is none."""
    anchors = [m for m in runs if m.settings["stage"] == 1 and m.settings.get("conditioning")]
    default = CostWeights()

    def distance(m: MeasuredRecipe) -> tuple[float, int]:
        log_ratios = (np.log(m.settings["lambda_in"] / default.lambda_in),
                      np.log(m.settings["lambda_out"] / default.lambda_out))
        return float(np.hypot(*log_ratios)), m.settings["split_seed"]

    return min(anchors, key=distance, default=None)


def prepare_any_weights(store: Store, host: str, cache_dir: Path, on_fold: Callable[[int, int], None] | None = None,
                        retriever: str = DEFAULT_RETRIEVER, n_arms: int = 6) -> str | None:
    """Train, once, the fold routers with which the recommended recipe decides at weights where it
    has no stored run (what `forge store load-demo` prepares); returns the id of the run they come
    from, None when the recipe has no such run."""
    from forge_core.evaluation.fold_decisions import out_of_fold_outcomes
    from forge_core.evidence.embedders import embedder_name

    evidence_hash = evaluated_retriever_hash(store, host, retriever)
    recipe = recommended_recipe(store, host, evidence_hash, embedder_name(), n_arms, Path(cache_dir))["recipe"]
    anchor = conditioned_anchor(recipe_runs(store, host, recipe, evidence_hash))
    if anchor is None:
        return None
    out_of_fold_outcomes(store, anchor.run_id, anchor.settings, CostWeights(), "deploy", Path(cache_dir), on_fold)
    return anchor.run_id


def stored_outcomes(store: Store, measured: MeasuredRecipe) -> pd.DataFrame:
    """A run's out-of-fold rows as the rule reads them, its routers those of the measured recipe
    (a Stage-2 run's `_stage1` parents under their routers' names for its Stage-1 recipe)."""
    rows = store.crossfit_results(measured.run_id)
    accounting = measured.settings["accounting"]
    suffix = measured.suffix
    other = "" if suffix else STAGE1_PARENT_SUFFIX
    names = rows["policy"]
    dropped = names.isin([router + other for router in ROUTERS]) | (names.str.endswith("_fallback") & bool(suffix))
    rows = rows[~dropped].copy()
    if suffix:
        rows["policy"] = rows["policy"].str.removesuffix(suffix)
    rows = rows.sort_values(["policy", "benchmark", "example_id"])
    rows["row"] = rows.groupby("policy").cumcount()
    return pd.DataFrame({"policy": rows["policy"], "kind": rows["kind"], "row": rows["row"],
                         "benchmark": rows["benchmark"], "arm": rows["arm"], "f1": rows["f1"],
                         "utility": rows[f"{accounting}_utility"], "tokens": rows[f"{accounting}_tokens"]})


def decision_of_run(store: Store, run_id: str, settings: dict) -> dict:
    """The rule applied to one stored run alone, at its weights, with its routers of its own stage
    (what `forge eval crossfit` prints beside the run's table)."""
    from forge_core.evaluation.recipe import run_recipe
    from forge_core.evidence.embedders import embedder_name

    measured = MeasuredRecipe(run_recipe(settings, embedder_name()), run_id, "", "", settings)
    return decide_from_outcomes(stored_outcomes(store, measured))


def _evidence(store: Store, host: str, recipe: Recipe, weights: CostWeights, accounting: str, retriever_hash: str,
              cache_dir: Path, on_fold: Callable[[int, int], None] | None,
              context_for: Callable[[dict], EvalContext] | None, measured: list[MeasuredRecipe] | None = None,
              engine: str = DEFAULT_ENGINE, address: str | None = None) -> tuple[str, list[str], Callable[[], tuple]]:
    """Where the decision's evidence comes from: ("stored run" or "fold decisions"), the run ids it
    rests on, and a function computing (outcomes, reproduced_share) from them (fold routers trained
    on `engine`)."""
    runs = recipe_runs(store, host, recipe, retriever_hash, measured)
    at = run_at_weights(runs, weights, accounting)
    if at is not None:
        return "stored run", [at.run_id], lambda: (stored_outcomes(store, at), None)
    anchor = conditioned_anchor(runs)
    if anchor is None:
        raise MissingStep(_missing_evidence(host, recipe, weights, accounting, runs))

    def from_folds() -> tuple:
        from forge_core.evaluation.fold_decisions import out_of_fold_outcomes  # torch: only when computing

        outcomes, reproduced = out_of_fold_outcomes(store, anchor.run_id, anchor.settings, weights, accounting,
                                                    cache_dir, on_fold,
                                                    context_for(anchor.settings) if context_for else None,
                                                    engine, address)
        return outcomes, reproduced

    return "fold decisions", [anchor.run_id], from_folds


def _missing_evidence(host: str, recipe: Recipe, weights: CostWeights, accounting: str,
                      runs: list[MeasuredRecipe]) -> str:
    """The one line saying what is missing and the command that makes it."""
    lambdas = f"--lambda-in {weights.lambda_in:g} --lambda-out {weights.lambda_out:g}"
    command = (f"forge eval crossfit --host {host} {lambdas} --stage {recipe.stage} "
               f"--warm-arms {recipe.warm_start_arms} --accounting {accounting}")
    if recipe.stage == 2:
        return (f"no crossfit run of recipe {recipe.recipe_id} ({recipe.label}) at λ_in {weights.lambda_in:g} / "
                f"λ_out {weights.lambda_out:g}, and a Stage-2 recipe decides only at its runs' weights: "
                f"run `{command}`")
    have = "its runs have none" if runs else "the store has no run of it"
    return (f"no Stage-1 crossfit run of recipe {recipe.recipe_id} ({recipe.label}) with the cost-conditioned routers "
            f"({have}): run `{command}` (about a minute on the demo store)")


# ---------------------------------------------------------------- the request


def decide(store: Store, host: str, weights: CostWeights, cache_dir: Path, accounting: str = "deploy",
           on_fold: Callable[[int, int], None] | None = None, retriever: str = DEFAULT_RETRIEVER,
           context_for: Callable[[dict], EvalContext] | None = None, recipe: Recipe | None = None,
           budget_tokens: float | None = None, n_arms: int = 6, measured: list[MeasuredRecipe] | None = None,
           engine: str = DEFAULT_ENGINE, address: str | None = None) -> dict:
    """The decision at `weights` for `host` under `retriever`'s evidence, of `recipe` (default: the
    recommended one), within `budget_tokens` a query when given (see the module docstring), with
    the checkpoint of the same recipe to deploy and its serve command. `on_fold(done, total)`
    follows the one-off training of the fold routers; `context_for`, given a run's stored
    settings, its `fold_decisions.decision_context` under `accounting`, kept by the caller;
    `measured`, the host's `recipe_choice.measured_recipes` under the retriever and the configured
    embedder, kept by the caller (they change only with the store's crossfit runs: the dashboard
    keeps them per store version), else read here. With `engine` "ray" the fold routers' one-off
    training runs a Ray task a fold (`address`: the cluster to join), with the same result."""
    from forge_core.evidence.embedders import embedder_name

    check_accounting(accounting)
    if budget_tokens is not None and not budget_tokens > 0:
        raise InvalidInput(f"a token budget is a positive number of tokens a query, not {budget_tokens:g}")
    evidence_hash = evaluated_retriever_hash(store, host, retriever)
    embedder = embedder_name()
    choice = recommended_recipe(store, host, evidence_hash, embedder, n_arms, Path(cache_dir), measured)
    chosen = recipe or choice["recipe"]
    source, run_ids, compute_outcomes = _evidence(store, host, chosen, weights, accounting, evidence_hash,
                                                  Path(cache_dir), on_fold, context_for,
                                                  measured if chosen.embedder == embedder else None, engine, address)

    def compute() -> dict:
        from forge_core.training.threads import one_thread

        outcomes, reproduced = compute_outcomes()
        with one_thread():
            return {**decide_from_outcomes(outcomes, budget_tokens), "reproduced_share": reproduced}

    key = canonical_hash("decision", DECISION_VERSION, {"recipe": chosen.recipe_id, "runs": run_ids,
                                                          "accounting": accounting, "weights": weights.to_dict(),
                                                          "budget": budget_tokens})
    result = cached_file(Path(cache_dir) / "decide" / f"{key[:20]}.json", compute,
                         lambda path: json.loads(path.read_text()),
                         lambda path, value: path.write_text(json.dumps(value)))
    decided = {"host": host, "retriever": retriever, **weights.to_dict(), "accounting": accounting,
               "recipe": chosen.to_dict(), "recommended_recipe": choice["recipe"].recipe_id,
               "recipe_measured": choice["measured"], "evidence": source, "run_ids": run_ids, **result}
    return named_decision(store, host, chosen, weights, decided)


def named_decision(store: Store, host: str, recipe: Recipe, weights: CostWeights, decided: dict) -> dict:
    """The decision with what to deploy named: a checkpoint of the recipe for a router (or the one
    command that trains it), the fixed arm's serve command otherwise, and a sentence."""
    from forge_core.evidence.retrievers import retriever_option

    deploy = decided["deploy"]
    evidence = retriever_option(decided["retriever"])
    lambdas = f"--lambda-in {weights.lambda_in:g} --lambda-out {weights.lambda_out:g}"
    variant = ROUTER_VARIANTS.get(served_router(deploy))
    conditioned = served_router(deploy) in CONDITIONED_VARIANTS
    guard = ""
    if deploy.endswith(GUARD_SUFFIX) and variant is not None:  # its serve and ask commands carry the guard
        guard = f" --guard {GUARD_ALPHA:g}" + (" --guard-fallback mix" if deploy.endswith(MIX_GUARD_SUFFIX) else "")
    checkpoint = name = None
    if variant is not None:
        stored = store.checkpoints(host)
        checkpoint = recipe_checkpoint(stored, recipe, variant, None if conditioned else weights)
        if checkpoint is not None:
            name = checkpoint_name(stored[stored["checkpoint_id"] == checkpoint].iloc[0].to_dict())
    if decided.get("deploy_mix"):
        variant = checkpoint = None
        command = f"forge serve --host {host}{evidence} --mix {decided['deploy_mix']}"
    elif variant is None:
        command = f"forge serve --host {host}{evidence} --arm {decided['deploy_arm']}"
    elif checkpoint is None:
        trained_at = "" if conditioned else f" {lambdas}"
        command = (f"forge train --host {host}{evidence} --variant {variant}{trained_at} "
                   f"{recipe.train_options(conditioned)}")
    else:
        command = (f"forge serve --host {host}{evidence} --router {checkpoint}" + (f" {lambdas}" if conditioned else "")
                   + guard)
    ask = f"forge ask --host {host}{evidence} " + (f"--arm {decided['deploy_arm']}" if variant is None else
                                                   f"--route --router {checkpoint}{guard}") + ' "QUESTION"'
    asks = not decided.get("deploy_mix") and (variant is None or checkpoint)  # `forge ask` answers no mix
    named = {**decided, "checkpoint_id": checkpoint, "checkpoint_name": name, "variant": variant,
             "conditioned": conditioned and variant is not None,
             "serve_command": command, "trains_first": variant is not None and checkpoint is None,
             "guard": GUARD_ALPHA if guard else None,
             "guard_fallback": ("mix" if deploy.endswith(MIX_GUARD_SUFFIX) else "arm") if guard else None,
             "ask_command": ask if asks else None}
    named["sentence"] = " ".join(filter(None, (decision_sentence(named), mix_sentence(named))))
    return named


def policy_name(decided: dict, name: str) -> str:
    """A policy as a decision names it: a fixed arm by its arm ("raw:no_think", never "always_raw" in
    a sentence that names the best fixed arm so), any other policy by its name."""
    row = decided["policies"].get(name, {})
    return row["arm"] if row.get("kind") == FIXED_ARM_KIND else name


def decision_sentence(decided: dict) -> str:
    """One or two lines: what to deploy, its gain over the best fixed arm, and why."""
    deploy, best_arm = decided["deploy"], decided["best_fixed_arm"]
    row = decided["policies"][deploy]
    where = f" at λ_in {decided['lambda_in']:g} / λ_out {decided['lambda_out']:g}"
    if decided["budget_tokens"] is not None:
        where += f" within {decided['budget_tokens']:g} tokens a query"
    if decided.get("deploy_mix"):
        mix = decided["mix"]
        arms = " + ".join(f"{arm} {share:.0%}" for arm, share in zip(mix["arms"], mix["shares"]))
        return f"Deploy the mix of fixed arms {arms}{where}: no servable router is decidably above it in F1."
    if not decided["router_candidates"]:
        text = f"No servable router beats {best_arm} decidably{where}: deploy the fixed arm {row['arm']}"
        if deploy != decided["best_fixed_policy"]:
            gain = row["gain_vs_best_fixed"]["utility"]
            text += (f" ({gain['difference']:+.3f} utility [{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}] against "
                     f"{best_arm}, not decidably below it, for fewer tokens)")
        return text + "."
    gain = row["gain_vs_best_fixed"]["utility"]
    what = f"{deploy} ({decided['checkpoint_name']})" if decided["checkpoint_id"] else deploy
    if deploy in decided["policies"] and row["kind"] == FIXED_ARM_KIND:
        what = f"the fixed arm {row['arm']}"
    text = (f"Deploy {what}{where}: {gain['difference']:+.3f} utility [{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}] "
            f"over {best_arm}")
    if deploy != decided["leader"]:
        text += (f"; {policy_name(decided, decided['leader'])} has the highest utility but the difference is not "
                 "decidable, so the cheaper "
                 f"({row['tokens']:,.0f} tokens a query against "
                 f"{decided['policies'][decided['leader']]['tokens']:,.0f}) is preferred")
    if decided["trains_first"]:
        text += f"; no checkpoint of this recipe is stored: train it first (`{decided['serve_command']}`)"
    return text + "."


def mix_sentence(decided: dict) -> str | None:
    """One line on the best mix of fixed arms at the budget and the router's F1 gain over it (None
    without a budget or a mix)."""
    mix = decided.get("mix")
    if mix is None:
        return None
    what = " + ".join(f"{arm} {share:.0%}" for arm, share in zip(mix["arms"], mix["shares"]))
    text = (f"Best mix of fixed arms within {decided['budget_tokens']:g} tokens a query: {what} "
            f"({mix['tokens']:,.0f} tokens, macro F1 {mix['f1']:.3f})")
    router = decided["deploy"] if decided["deploy"] in mix["gains"] else decided["challenger"]
    if router in mix["gains"]:
        gain = mix["gains"][router]
        text += (f"; {router} {gain['difference']:+.3f} F1 [{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}] against it "
                 f"({FLOOR_WORDS[gain['verdict']]} it)")
    if not mix["deployed"]:
        return text + "."
    if len(mix["arms"]) == 1:
        return text + f": deploy the mix, the fixed arm {mix['arms'][0]}."
    return text + f": deploy the mix (`{decided['serve_command']}`)."


FLOOR_WORDS = {"above": "decidably above", "below": "decidably below",
               "not decidably different": "not decidably different from"}


def floor_verdict(vs_floor: dict) -> str:
    """How a policy stands against the floor, from its paired 95% interval: "decidably above",
    "decidably below" or "not decidably different from"."""
    return FLOOR_WORDS[Interval.of(vs_floor["ci"]).verdict]
