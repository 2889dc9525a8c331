"""`forge rewards audit`: how far a proxy reward (judge or consensus) can be trusted, measured on
the queries that also have gold answers.

Two views. Per arm: Spearman's rank correlation of the proxy with gold F1 over the queries, and per
query whether the proxy-best arm is a gold-best arm (ties in gold all count as best; a proxy tie goes
to the first arm in action order), by reward alone and by utility at the chosen cost weights, with
bootstrap 95% intervals (queries resampled within benchmarks). And cross-fitted: per router variant,
one router trained on gold utility and one on proxy utility in every fold (same folds, features and
settings as `forge eval --protocol crossfit`), both scored on the held-out fold with gold F1 and the
deployment's accounting; `regret_vs_gold` is the macro utility of the proxy-trained router minus the
gold-trained one's, with its paired 95% interval. With `grid`, the paper's proxy table too: Stage 2
on top of those Stage-1 routers, trained on gold or on the proxy (gold/gold, gold/proxy,
proxy/proxy: Stage-1 reward / Stage-2 reward), each against gold/gold. Routers live in memory only.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from forge_core.errors import MissingStep
from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evaluation.cached import retriever_fields
from forge_core.evaluation.crossfit import DEV_FRACTION, FoldRouter, crossfit_folds
from forge_core.evidence.retrievers import evaluated_retriever_hash
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.outcomes import score_decisions
from forge_core.policies.registry import TrainedRouter, variants
from forge_core.rewards.sources import JUDGE, latest_judge_key, reward_matrix
from forge_core.routing.features import compute_features
from forge_core.routing.outcome_table import OutcomeTable
from forge_core.routing.utility import pareto_utility
from forge_core.statistics import Interval, macro, paired_bootstrap_ci
from forge_core.store import Store
from forge_core.training.settings import Stage1Config, Stage2Config
from forge_core.training.threads import one_torch_thread

log = logging.getLogger(__name__)

MIN_AUDIT_QUERIES = 10  # below this, correlations and intervals say nothing
STAGE1_RECIPES = (("gold", None), ("proxy", None))  # (Stage-1 reward, Stage-2 reward): Stage 1 alone
GRID_RECIPES = (("gold", "gold"), ("gold", "proxy"), ("proxy", "proxy"))  # the paper's proxy table


def audit_context(store: Store, request: RewardAuditRequest) -> tuple[EvalContext, np.ndarray]:
    """The evaluation context of the queries with every arm's proxy reward known, and that proxy."""
    context = evaluation_context(store, request.host, request.n_arms, request.weights,
                                 retriever_hash=evaluated_retriever_hash(store, request.host, request.retriever))
    proxy = reward_matrix(store, context.table, request.reward, request.judge_key)
    complete = ~np.isnan(proxy).any(axis=1)
    if complete.sum() < MIN_AUDIT_QUERIES:
        raise MissingStep(f"only {int(complete.sum())} queries of host '{request.host}' have a {request.reward} "
                          f"reward on every arm: the audit needs at least {MIN_AUDIT_QUERIES}")
    table = context.table.subset(complete)
    return EvalContext(store, table, table.fit_normalizer(), request.weights), proxy[complete]


def best_match(table: OutcomeTable, proxy: np.ndarray, gold_values: np.ndarray, proxy_values: np.ndarray) -> dict:
    """Share of queries whose proxy-best arm is a gold-best arm, with its bootstrap 95% interval."""
    chosen = proxy_values.argmax(axis=1)
    gold_best = gold_values.max(axis=1)
    match = np.isclose(gold_values[np.arange(len(chosen)), chosen], gold_best).astype(np.float64)
    benchmarks = table.benchmarks
    return {"share": macro(match, benchmarks),
            "ci": list(paired_bootstrap_ci(match, np.zeros_like(match), benchmarks))}


def arm_audit(table: OutcomeTable, proxy: np.ndarray, gold_utility: np.ndarray) -> dict[str, dict]:
    """Per arm: queries, mean proxy, mean gold F1, Spearman's rho of proxy with gold (None when
    either is constant) and, as the fixed arm's reference for the routers, its macro gold utility."""
    arms = {}
    for column, arm in enumerate(table.arms):
        values, gold = proxy[:, column], table.f1[:, column]
        from scipy.stats import spearmanr  # scipy.stats takes seconds to import: only when an audit is computed

        rho = np.nan if np.ptp(values) == 0 or np.ptp(gold) == 0 else spearmanr(values, gold).statistic
        arms[arm] = {"queries": int(len(proxy)), "mean_proxy": float(proxy[:, column].mean()),
                     "mean_gold_f1": float(table.f1[:, column].mean()),
                     "spearman": None if np.isnan(rho) else float(rho),
                     "macro_gold_utility": macro(gold_utility[:, column], table.benchmarks)}
    return arms


def crossfit_recipes(context: EvalContext, proxy: np.ndarray, request: RewardAuditRequest,
                     on_fold: Callable[[int, int], None] | None = None) -> dict[tuple, dict[str, np.ndarray]]:
    """Per (router, Stage-1 reward, Stage-2 reward or None): the out-of-fold per-query gold F1 and
    deployment utility of the router trained that way (Stage 2 starts from the Stage-1 router of
    the same fold trained on its Stage-1 reward)."""
    n = len(context.table)
    stage1 = Stage1Config(seed=request.seed, max_epochs=request.max_epochs)
    stage2 = Stage2Config(steps=request.stage2_steps, seed=request.seed)
    recipes = STAGE1_RECIPES + (GRID_RECIPES if request.grid else ())
    scores = {(name, *recipe): {"f1": np.zeros(n), "utility": np.zeros(n)}
              for name in request.routers for recipe in recipes}
    with one_torch_thread():
        for fold, gold in crossfit_folds(context, request.folds, DEV_FRACTION, request.split_seed):
            trained_on = {"gold": gold, "proxy": dataclasses.replace(
                gold, table=dataclasses.replace(gold.table, f1=proxy))}
            rows = gold.rows("test")
            for name in request.routers:
                variant = variants(TrainedRouter)[name]
                stage1_routers = {}
                for first, second in recipes:
                    if second is None:
                        router = stage1_routers[first] = FoldRouter(f"{name}_{first}", variant, stage1)
                        router.fit(trained_on[first])
                    else:
                        router = FoldRouter(f"{name}_{first}_{second}", variant, stage1, stage2,
                                            parent=stage1_routers[first])
                        router.fit(trained_on[second])
                    outcome = score_decisions(gold, rows, router, router.decide(gold, rows))
                    scores[(name, first, second)]["f1"][rows] = outcome.f1
                    scores[(name, first, second)]["utility"][rows] = outcome.deploy_utility
            if on_fold:
                on_fold(fold + 1, request.folds)
    return scores


def proxy_regret(scores: dict[tuple, dict[str, np.ndarray]], benchmarks: np.ndarray,
                 routers: tuple[str, ...]) -> dict[str, dict]:
    """Per router: macro gold F1 and utility of its gold-trained and proxy-trained Stage-1 versions,
    and `regret_vs_gold` (proxy minus gold utility) with its paired interval."""
    report = {}
    for name in routers:
        gold, proxy = scores[(name, "gold", None)], scores[(name, "proxy", None)]
        report[name] = {
            "gold_trained": macro_scores(gold, benchmarks), "proxy_trained": macro_scores(proxy, benchmarks),
            "regret_vs_gold": macro(proxy["utility"], benchmarks) - macro(gold["utility"], benchmarks),
            "ci_regret_vs_gold": list(paired_bootstrap_ci(proxy["utility"], gold["utility"], benchmarks))}
    return report


def proxy_grid(scores: dict[tuple, dict[str, np.ndarray]], benchmarks: np.ndarray, routers: tuple[str, ...],
               reward: str) -> dict[str, dict]:
    """Per router and recipe ("gold/gold", "gold/<reward>", "<reward>/<reward>"): macro gold F1 and
    utility, and against gold/gold the difference of each with its paired 95% interval."""
    grid = {}
    for name in routers:
        base = scores[(name, "gold", "gold")]
        grid[name] = {}
        for first, second in GRID_RECIPES:
            row = scores[(name, first, second)]
            entry = macro_scores(row, benchmarks)
            for metric in ("f1", "utility"):
                entry[f"{metric}_vs_gold_gold"] = macro(row[metric], benchmarks) - macro(base[metric], benchmarks)
                entry[f"ci_{metric}_vs_gold_gold"] = list(paired_bootstrap_ci(row[metric], base[metric], benchmarks))
            label = "/".join(reward if part == "proxy" else part for part in (first, second))
            grid[name][label] = entry
    return grid


def macro_scores(row: dict[str, np.ndarray], benchmarks: np.ndarray) -> dict[str, float]:
    """Macro gold F1 and deployment utility of one recipe's out-of-fold scores."""
    return {"macro_f1": macro(row["f1"], benchmarks), "macro_utility": macro(row["utility"], benchmarks)}


def losing_routers(regret: dict[str, dict], grid: dict[str, dict], reward: str) -> list[str]:
    """The routers trained on the proxy (Stage 1, and with the grid Stage 2 too) whose utility
    interval against their gold-trained counterparts lies below zero, e.g. "forge_lite (judge)"."""
    losing = [f"{name} ({reward})" for name, row in regret.items() if Interval.of(row["ci_regret_vs_gold"]).below]
    return losing + [f"{name} ({label})" for name, recipes in grid.items() for label, row in recipes.items()
                     if Interval.of(row["ci_utility_vs_gold_gold"]).below]


def verdict(regret: dict[str, dict], losing: list[str], reward: str) -> str:
    """One line: whether routers trained on the proxy lose utility against gold training."""
    if not regret:
        return "no router was cross-fitted: see the per-arm correlations"
    if losing:
        return (f"not good enough at these weights: {', '.join(losing)} lose utility against gold training "
                "(interval below zero)")
    return f"good enough at these weights: routers trained on {reward} lose no significant utility against gold"


def run_reward_audit(store: Store, request: RewardAuditRequest,
                     on_fold: Callable[[int, int], None] | None = None) -> dict:
    """The audit report (see the module docstring); computes missing features first."""
    request.check(store)
    if request.routers:
        compute_features(store, request.host, retriever=request.retriever)
    context, proxy = audit_context(store, request)
    table = context.table
    gold_utility = context.utility
    c_in, c_out = context.normalizer.transform(table.tokens_in, table.tokens_out)
    proxy_utility = pareto_utility(proxy, c_in, c_out, request.weights)
    scores = crossfit_recipes(context, proxy, request, on_fold) if request.routers else {}
    regret = proxy_regret(scores, table.benchmarks, request.routers)
    grid = proxy_grid(scores, table.benchmarks, request.routers, request.reward) if request.grid else {}
    losing = losing_routers(regret, grid, request.reward)
    return {"host": request.host, "reward": request.reward,
            "judge_key": request.judge_key or (latest_judge_key(store, request.host, table.retriever_hash)
                                               if request.reward == JUDGE else None),
            "queries": int(len(table)), **request.weights.to_dict(),
            "folds": request.folds, "arms": arm_audit(table, proxy, gold_utility),
            "best_arm_match": best_match(table, proxy, table.f1, proxy),
            "best_utility_arm_match": best_match(table, proxy, gold_utility, proxy_utility),
            "routers": regret, "grid": grid, "stage2_steps": request.stage2_steps if request.grid else None,
            "good_enough": not losing if regret else None, "verdict": verdict(regret, losing, request.reward),
            } | retriever_fields(request.retriever, table.retriever_hash)
