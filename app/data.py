"""Cached access to the library for the pages.

Expensive resources live in `st.cache_resource` (the store handle, BM25 retrievers, served
embedded hosts); query results in `st.cache_data` with short TTLs, shortest for job progress, so
every page sees what a running job writes within seconds. Cached functions take the `Store` and
are keyed by its path.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from forge_core import config
from forge_core.errors import ForgeError, InvalidInput
from forge_core.evidence.retrievers import (
    DEFAULT_RETRIEVER,
    evaluated_retriever_hash,
    host_default_retriever,
    list_retriever_configs,
    outcome_retriever_hash,
    retriever_config_for_hash,
    retrievers_with_outcomes,
)
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import config_hash, list_host_configs
from forge_core.policies.context import EvalContext, evaluation_context
from forge_core.policies.grounding import gold_recall_frame
from forge_core.policies.support_rates import newest_support_key, support_rate_frame, support_verdicts
from forge_core.records import Example, HostPrices
from forge_core.reports import tables
from forge_core.reports.checkpoint_views import select_checkpoints
from forge_core.routing import checkpoints as routing_checkpoints
from forge_core.routing.checkpoints import LoadedCheckpoint, load_checkpoint
from forge_core.routing.features import Embedder, compute_features, load_embedder
from forge_core.routing.outcome_table import OutcomeTable, load_outcome_table
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

# Scoring policies, training and the UMAP import sklearn, torch, scipy.stats or umap (seconds of CPU): the
# functions that compute them import them on first use, so a page that only reads stored tables (the
# Overview) never loads them (tests/app/test_page_imports.py checks it). So do the jobs, the enumeration
# planning, `forge decide`, retrieval and the served hosts (aiohttp, httpx, scipy.sparse: about a second of the
# first page's imports on a loaded machine), which only the pages that start or follow jobs, plan, decide or ask use.
if TYPE_CHECKING:
    from forge_core.enumeration.estimate import StageZeroEstimate
    from forge_core.enumeration.planning import EnumerationPlan
    from forge_core.evaluation.cached import CachedRequest
    from forge_core.evaluation.recipe_choice import MeasuredRecipe
    from forge_core.evaluation.transfer_request import TransferRequest
    from forge_core.evidence.retrieval import Retriever
    from forge_core.evidence.retriever_backends import AnyRetriever
    from forge_core.jobs import JobProgress
    from forge_core.reports.action_map import ActionMap
    from forge_core.reports.demo_questions import DemoQuestion
    from forge_core.reports.reliability import Reliability, ReliabilityBase
    from forge_core.routing.guard import Guard

STORE_KEY = {Store: lambda store: str(store.path)}
RESULTS_CACHE_ENTRIES = 256  # Pareto points and action maps kept (keyed by store version and inputs)
JOBS_TTL_S = 2  # job progress: refreshed as often as the jobs panel polls
STORE_TTL_S = 10  # counts and configurations
TABLE_TTL_S = 30  # outcome tables (heavier to load)
KEEP_STORE_OPEN_S = 0.25  # a burst of reads opens the store file once (`StoreFile.keep_open_s`); short, because
# a job writing meanwhile waits for it, and the job and train panels re-read every 2 s


def store() -> Store:
    """The store at FORGE_STORE (default data/forge.duckdb)."""
    return _store(str(config.store_path()))


@st.cache_resource(show_spinner=False)
def _store(path: str) -> Store:
    return Store(path, keep_open_s=KEEP_STORE_OPEN_S)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def benchmark_stats(store: Store) -> dict[str, dict]:
    """Examples, documents and split sizes per benchmark."""
    return store.benchmark_stats()


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def coverage(store: Store) -> dict[str, dict]:
    """Complete queries per host on its default alphabet."""
    return tables.store_coverage(store)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def hosts_with_outcomes(store: Store) -> list[str]:
    """Hosts with at least one stored outcome."""
    return store.hosts_with_outcomes()


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def host_configs(store: Store) -> list[HostConfig]:
    """Built-in and stored host configurations."""
    return list_host_configs(store)


def host_prices(store: Store, configs: list[HostConfig]) -> dict[str, HostPrices]:
    """The prices of the hosts that have them, by host name (uncached: a saved price shows at once)."""
    prices = store.all_host_prices()
    return {config.name: prices[config.name] for config in configs if config.name in prices}


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def alphabet_size(store: Store, host: str) -> int:
    """The host's default alphabet size (12 on thinking hosts, else 6)."""
    return tables.default_alphabet_size(store, host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def retriever_names(store: Store) -> list[str]:
    """Every configured retriever's name: the default bm25 first, then the stored ones by name."""
    return [retriever.name for retriever in list_retriever_configs(store)]


@st.cache_data(show_spinner=False, hash_funcs=STORE_KEY)
def stored_transfer_weights(store: Store, version: int, request: Any) -> list[CostWeights]:
    """The weights at which both hosts of a transfer have its routers (`version`: see `store_version`)."""
    from forge_core.evaluation.transfer_request import stored_transfer_weights as stored

    return stored(store, request)


@st.cache_data(show_spinner=False, hash_funcs=STORE_KEY)
def transfer_opening(store: Store, version: int) -> tuple[str, str] | None:
    """The source and target hosts the Transfer page opens on: the first pair whose routers are
    stored at the default weights (`view_cache.default_transfer_request`, whose report the background
    views compute); None with fewer than two hosts (`version`: see `store_version`)."""
    from forge_core.precompute.view_cache import default_transfer_request

    request = default_transfer_request(store, hosts_with_outcomes(store))
    return None if request is None else (request.source_host, request.target_host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def measured_only_retrievers(store: Store) -> dict[str, str]:
    """The retrievers measured by `forge evidence compare` that are not configured (no outcomes to offer)."""
    from forge_core.reports.evidence import measured_only

    return measured_only(store.evidence_results(), retriever_names(store))


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def host_retriever(store: Store, host: str) -> str:
    """The retriever the host uses unless told otherwise (`forge retriever use`, else bm25)."""
    return host_default_retriever(store, host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def retrievers_of(store: Store, host: str) -> list[str]:
    """The retrievers the host has outcomes under: bm25 first, then the configured ones."""
    return retrievers_with_outcomes(store, host)


@st.cache_data(ttl=TABLE_TTL_S, show_spinner="Loading outcomes…", hash_funcs=STORE_KEY)
def outcome_table(store: Store, host: str, n_arms: int, retriever: str = DEFAULT_RETRIEVER) -> OutcomeTable:
    """The host's complete queries on an alphabet under one retriever's evidence."""
    return load_outcome_table(store, host, n_arms,
                              retriever_hash=evaluated_retriever_hash(store, host, retriever))


@st.cache_data(ttl=TABLE_TTL_S, show_spinner="Rebuilding the prompts' evidence…", hash_funcs=STORE_KEY)
def gold_recall(store: Store, host: str, n_arms: int, split: str, retriever: str = DEFAULT_RETRIEVER) -> pd.DataFrame:
    """Gold recall of each support form per benchmark on the host's complete queries of `split`."""
    table = outcome_table(store, host, n_arms, retriever)
    return gold_recall_frame(store, table if split == "all" else table.split(split))


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def support_rates(store: Store, host: str, n_arms: int, split: str,
                  retriever: str = DEFAULT_RETRIEVER) -> tuple[pd.DataFrame, str | None]:
    """Support rates of always taking each arm per benchmark on the host's complete queries of
    `split`, and the name of their evaluator (None without support verdicts)."""
    table = outcome_table(store, host, n_arms, retriever)
    table = table if split == "all" else table.split(split)
    verdicts = support_verdicts(store, table)
    return support_rate_frame(verdicts, table), verdicts.evaluator


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def support_evaluator(store: Store, host: str, retriever: str = DEFAULT_RETRIEVER) -> str | None:
    """The evaluator of the host's newest support verdicts of its answers under the retriever, None
    without any."""
    newest = newest_support_key(store, host, evaluated_retriever_hash(store, host, retriever))
    return newest[1] if newest else None


def depth_checks(store: Store, configs: list[HostConfig]) -> dict[str, dict]:
    """host name -> the stored depth check report of its current configuration (checked hosts only)."""
    stored = {config.name: store.host_check(config.name, config_hash(config)) for config in configs}
    return {name: found[1] for name, found in stored.items() if found is not None}


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def reasoning_summary(store: Store, host: str, retriever: str = DEFAULT_RETRIEVER) -> pd.DataFrame:
    """Reasoning tokens per arm over the host's answered outcomes under the retriever."""
    return tables.reasoning_summary(store, host, evaluated_retriever_hash(store, host, retriever))


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def split_examples(store: Store, benchmark: str, split: str) -> list[Example]:
    """The examples of one split (seed 0) in import order."""
    return store.examples(benchmark, store.split_ids(benchmark, split))


@st.cache_data(ttl=STORE_TTL_S, show_spinner="Planning…", hash_funcs=STORE_KEY)
def missing_calls(store: Store, plan: EnumerationPlan) -> int:
    """Host calls a plan still needs."""
    from forge_core.enumeration.planning import count_calls, plan_work

    return count_calls(plan_work(store, plan))


@st.cache_data(ttl=STORE_TTL_S, show_spinner="Counting the plan's tokens…", hash_funcs=STORE_KEY)
def plan_estimate(store: Store, plan: EnumerationPlan) -> StageZeroEstimate:
    """What the plan's missing calls will cost (see `forge_core.enumeration.estimate`)."""
    from forge_core.enumeration.estimate import estimate_plan

    return estimate_plan(store, plan)


@st.cache_data(ttl=JOBS_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def recent_jobs(store: Store, kind: str = "enumerate") -> list[tuple[dict, JobProgress]]:
    """The newest jobs of one kind (enumerate, train, judge) with their progress."""
    from forge_core import jobs

    return jobs.recent_jobs(store, kind)


@st.cache_data(ttl=JOBS_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def recent_errors(store: Store, host: str) -> list[str]:
    """The host's latest failed calls, one line each."""
    from forge_core import jobs

    return jobs.recent_errors(store, host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def checkpoints(store: Store) -> pd.DataFrame:
    """Router checkpoints, newest first."""
    return store.checkpoints()


def host_checkpoints(store: Store, host: str, retriever: str, n_arms: int | None = None, variant: str | None = None,
                     stage: int | None = None) -> pd.DataFrame:
    """The host's checkpoints trained under the retriever's evidence, newest first, of `n_arms` arms,
    `variant` and `stage` where given (`select_checkpoints`)."""
    return select_checkpoints(checkpoints(store), host, evaluated_retriever_hash(store, host, retriever),
                              n_arms=n_arms, variant=variant, stage=stage)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def conditioned_checkpoints(store: Store, host: str, n_arms: int, retriever: str = DEFAULT_RETRIEVER) -> dict[str, str]:
    """The cost-conditioned router of each variant the host has under the retriever (Lite, then
    Full): checkpoint id -> its policy name (`forge_lite_cond`, `forge_full_cond`)."""
    from forge_core.policies.conditioned import conditioned_policies
    from forge_core.policies.registry import ConditionedRouter, variants

    policies = conditioned_policies(store, host, n_arms,
                                    retriever_hash=evaluated_retriever_hash(store, host, retriever))
    lite_first = sorted(policies, key=lambda policy: variants(ConditionedRouter)[policy.name] != "lite")
    return {policy.checkpoint_id: policy.name for policy in lite_first}


@st.cache_data(show_spinner="Finding questions whose arm moves with the weights…", max_entries=RESULTS_CACHE_ENTRIES,
               hash_funcs=STORE_KEY)
def demo_questions_of(store: Store, version: int, host: str, checkpoint_id: str) -> list[DemoQuestion]:
    """Stored test questions whose arm under the conditioned checkpoint changes with the weights
    (`version`: see `store_version`), kept under the cache directory (`demo/`: the default router's
    are computed there by `forge store load-demo`)."""
    from forge_core.reports.demo_questions import demo_questions_view

    return demo_questions_view(store, host, checkpoint_id, config.cache_dir())


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def default_router(store: Store, host: str) -> str | None:
    """The checkpoint the host routes with by default (`forge_core.routing.checkpoints.default_router`:
    the marked one, else the newest cost-conditioned Lite, else the newest Lite), or None."""
    return routing_checkpoints.default_router(store, host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def marked_default_router(store: Store, host: str) -> str | None:
    """The checkpoint the user marked as the host's default router, or None (without a mark,
    `forge_core.routing.checkpoints.default_router` falls back to the conditioned, then newest Lite)."""
    return store.marked_default_router(host)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def checkpoint_record(store: Store, checkpoint_id: str) -> dict[str, Any]:
    """A checkpoint's record (lineage, metrics, training log), without its weights."""
    found = store.checkpoint(checkpoint_id)
    if found is None:
        raise InvalidInput(f"no checkpoint '{checkpoint_id}' (see `forge checkpoints`)")
    return found[0]


@st.cache_data(ttl=JOBS_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def job_logs(store: Store, job_id: str) -> list[dict]:
    """A job's log rows so far (training epochs or steps)."""
    return store.job_logs(job_id)


def store_version(store: Store) -> int:
    """Changes whenever the store file (or its write-ahead log) changes: part of the cache key of
    results computed from the whole store, so they are recomputed after any write."""
    version = 0
    for path in (store.path, store.path.with_name(store.path.name + ".wal")):
        try:
            version += path.stat().st_mtime_ns
        except OSError:
            pass
    return version


@st.cache_resource(show_spinner="Loading outcomes and features…", max_entries=4, hash_funcs=STORE_KEY)
def evaluation_base(store: Store, version: int, host: str, n_arms: int, accounting: str,
                    retriever: str = DEFAULT_RETRIEVER) -> EvalContext:
    """The host's evaluation context under one retriever's evidence (features computed first),
    loaded once per store version and shared by every weight the sliders visit, with its
    weight-free fits (`version`: see `store_version`)."""
    evidence = evaluated_retriever_hash(store, host, retriever)
    features_ready(store, version, host, retriever)  # the Action map's check too: made once per store version
    return evaluation_context(store, host, n_arms, CostWeights(), accounting=accounting, retriever_hash=evidence)


# No spinner: while the weights move, the previous chart stays on screen until the new one is ready.
@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def pareto(store: Store, version: int, request: CachedRequest, by_benchmark: bool) -> pd.DataFrame:
    """Every policy's cost/quality point and the frontier of a Cached request, as the Cached protocol
    scores it (`version`: see `store_version`), kept under the cache directory (`pareto/`: the page's
    first request is computed there by `forge store load-demo`)."""
    from forge_core.precompute.view_cache import pareto_view

    settings = request.settings

    def compute() -> pd.DataFrame:
        from forge_core.training.threads import one_thread

        base = evaluation_base(store, version, settings.host, settings.n_arms, settings.accounting, settings.retriever)
        with one_thread():
            return tables.pareto_report(store, request, by_benchmark, base)

    return pareto_view(store, request, by_benchmark, config.cache_dir(), compute)


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def transfer(store: Store, version: int, request: TransferRequest) -> dict:
    """The transfer report (`forge eval transfer`) for a request that stores nothing (`version`:
    see `store_version`), kept under the cache directory (`transfer/`: the page's default request
    is computed there by `forge store load-demo`)."""
    from forge_core.precompute.view_cache import transfer_view

    def compute() -> dict:
        from forge_core.evaluation.transfer import run_transfer
        from forge_core.training.threads import one_torch_thread

        with one_torch_thread():
            return run_transfer(store, request)

    return transfer_view(store, request, config.cache_dir(), compute)


@st.cache_data(show_spinner="Auditing the proxy reward…", max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def reward_audit(store: Store, version: int, host: str, reward: str, n_arms: int, weights: CostWeights,
                 routers: tuple[str, ...] = (), retriever: str = DEFAULT_RETRIEVER) -> dict:
    """The audit of a proxy reward against gold under the retriever (`version`: see `store_version`):
    per arm only (seconds; under bm25 kept under the cache directory, `audit/`, where `forge store
    load-demo` computes the consensus reward's at the default weights), or with `routers`
    cross-fitted on gold and on the proxy too (a minute or so)."""
    if not routers and retriever == DEFAULT_RETRIEVER:
        from forge_core.precompute.view_cache import reward_audit_view

        return reward_audit_view(store, host, reward, n_arms, weights, config.cache_dir())
    from forge_core.evaluation.audit_request import RewardAuditRequest
    from forge_core.evaluation.proxy_audit import run_reward_audit

    request = RewardAuditRequest(host=host, reward=reward, n_arms=n_arms, weights=weights,
                                 routers=routers, retriever=retriever)
    return run_reward_audit(store, request)


@st.cache_data(show_spinner="Reading the stored crossfit runs (a run's intervals are computed once, then kept)…",
               max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def crossfit_reports(store: Store, version: int, host: str, retriever: str = DEFAULT_RETRIEVER) -> list[dict]:
    """The host's finished crossfit runs under the retriever as stored (`version`: see
    `store_version`), each report computed once and kept under the cache directory (`crossfit/`)."""
    from forge_core.evaluation.crossfit import finished_crossfit_reports
    from forge_core.precompute.view_cache import CROSSFIT_CACHE

    return finished_crossfit_reports(store, host, config.cache_dir() / CROSSFIT_CACHE,
                                     evaluated_retriever_hash(store, host, retriever))


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def decision_at(store: Store, version: int, host: str, weights: CostWeights, accounting: str,
                retriever: str = DEFAULT_RETRIEVER, budget_tokens: float | None = None) -> dict | str:
    """`forge decide` at these weights under the retriever, within `budget_tokens` when given
    (`version`: see `store_version`): the decision, or the one line saying which command makes what
    it needs. Kept under the cache directory (`decide/`)."""
    from forge_core.evaluation import decide as decisions

    try:
        return decisions.decide(VersionReads(store, version), host, weights, config.cache_dir(), accounting,
                                retriever=retriever,
                                context_for=lambda settings: decision_base(store, version, settings, accounting),
                                budget_tokens=budget_tokens, measured=measured_recipes(store, version, host, retriever))
    except ForgeError as error:
        return str(error)


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=STORE_KEY)
def measured_recipes(store: Store, version: int, host: str, retriever: str = DEFAULT_RETRIEVER) -> list[MeasuredRecipe]:
    """The recipes the host's finished crossfit runs under the retriever measured, with the configured
    embedder (`recipe_choice.measured_recipes`), built once per store version (`version`: see
    `store_version`) and shared by every weight: `forge decide` reads them to choose the recipe and to
    find its runs, and building every run's recipe again took a third of a slider step."""
    from forge_core.evaluation.recipe_choice import measured_recipes as read_measured
    from forge_core.evidence.embedders import embedder_name

    return read_measured(VersionReads(store, version), host, evaluated_retriever_hash(store, host, retriever),
                         embedder_name())


@dataclasses.dataclass(frozen=True)
class VersionReads:
    """The store as a slider step's decision reads it: its weight-free reads (the host's crossfit runs,
    which `forge decide` reads twice, to choose the recipe and to find its runs) made once per store
    version (`version`: see `store_version`) and shared by every weight; everything else is the store's."""

    store: Store
    version: int

    def crossfit_runs(self, host: str | None = None) -> pd.DataFrame:
        """`Store.crossfit_runs`, read once per store version (a copy: the caller may change it)."""
        return crossfit_runs(self.store, self.version, host).copy()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=STORE_KEY)
def crossfit_runs(store: Store, version: int, host: str | None = None) -> pd.DataFrame:
    """The registered crossfit runs with their finished folds (`Store.crossfit_runs`) of one store
    version (`version`: see `store_version`; a run's new fold changes the file, so the version)."""
    return store.crossfit_runs(host)


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=STORE_KEY)
def recommended_recipe(store: Store, version: int, host: str, n_arms: int, retriever: str = DEFAULT_RETRIEVER):
    """The recipe `forge train` defaults to for the host (`forge recipes`; `version`: see
    `store_version`): the one its crossfit runs measure best, else the library's default."""
    from forge_core.evaluation.recipe_choice import recommended_or_default

    return recommended_or_default(store, host, n_arms, retriever, config.cache_dir())


@st.cache_resource(show_spinner="Loading the crossfit run's outcomes and features…", max_entries=4,
                   hash_funcs=STORE_KEY)
def decision_base(store: Store, version: int, settings: dict, accounting: str) -> EvalContext:
    """The evaluation context `forge decide` reads for a crossfit run's stored `settings`, loaded
    once per store version and shared by every weight the sliders visit (`version`: see
    `store_version`): a slider step then decides without reloading outcomes and features."""
    from forge_core.evaluation.fold_decisions import decision_context

    return decision_context(store, settings, accounting)


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def crossfit_arms(store: Store, version: int, run_id: str, policy: str) -> pd.DataFrame:
    """A policy's stored out-of-fold arm per query (`version`: see `store_version`)."""
    return tables.crossfit_arms(store, run_id, policy)


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def action_map(store: Store, version: int, host: str, checkpoint_id: str, split: str,
               benchmarks: tuple[str, ...] | None = None, weights: CostWeights | None = None,
               retriever: str = DEFAULT_RETRIEVER) -> ActionMap:
    """The checkpoint's action map on the host's queries of a split, only those of `benchmarks`
    when given, a cost-conditioned router's at `weights` (`version`: see `store_version`), on the
    outcomes and features of the retriever the checkpoint was trained under (`retriever`: its
    name, whose features are computed first); kept under the cache directory (`action_map/`: the host's
    default router's first one is computed there by `forge store load-demo`), and its UMAP once per set of
    queries (`umap/`), across app restarts, store writes and weights."""
    from forge_core.precompute.view_cache import action_map_view
    from forge_core.reports.action_map import compute_action_map

    def compute() -> ActionMap:
        features_ready(store, version, host, retriever)
        return compute_action_map(store, host, checkpoint_id, split, benchmarks=benchmarks,
                                  umap_cache=config.cache_dir() / "umap", weights=weights)

    return action_map_view(store, checkpoint_id, split, benchmarks, weights, config.cache_dir(), compute)


@st.cache_data(show_spinner="Computing missing features…", max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def features_ready(store: Store, version: int, host: str, retriever: str = DEFAULT_RETRIEVER) -> bool:
    """The host's missing features under the retriever computed, checked once per store version
    (`version`: see `store_version`; a slider step does not look again)."""
    compute_features(store, host, retriever=retriever)
    return True


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def reliability(store: Store, version: int, checkpoint_id: str,
                weights: CostWeights | None = None) -> Reliability | str:
    """The checkpoint's reliability table on its held-out test queries (`checkpoint_reliability`),
    or why there is none (a one-line reason: no test split, no outcomes); kept under the cache
    directory (`pareto/`: the Pareto page's first ones are computed there by `forge store load-demo`)."""
    from forge_core.precompute.view_cache import reliability_view
    from forge_core.reports.reliability import reliability_at

    try:
        return reliability_view(store, checkpoint_id, weights, config.cache_dir(),
                                lambda: reliability_at(reliability_base(store, version, checkpoint_id), weights))
    except ForgeError as error:
        return str(error)


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def checkpoint_guard(store: Store, version: int, checkpoint_id: str, weights: CostWeights | None = None,
                     fallback: str = "arm") -> Guard | str:
    """The checkpoint's guard (`forge_core.reports.checkpoint_guard`: its fallback the best fixed arm
    ("arm") or the cost-matched mix ("mix"), its margin threshold for the risk alpha, from its dev
    queries), or why there is none (one line)."""
    from forge_core.reports.checkpoint_guard import checkpoint_guard as fitted_guard

    try:
        return fitted_guard(store, checkpoint_id, weights, fallback=fallback)
    except ForgeError as error:
        return str(error)


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=STORE_KEY)
def reliability_base(store: Store, version: int, checkpoint_id: str) -> ReliabilityBase:
    """The weight-free part of a checkpoint's reliability table (its test queries, features and loaded
    router), loaded once per store version and shared by every weight the sliders visit."""
    from forge_core.reports.reliability import reliability_base as load_base

    return load_base(store, checkpoint_id)


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def example(store: Store, benchmark: str, example_id: str) -> Example | None:
    """One example (question and gold answers), or None."""
    found = store.examples(benchmark, [example_id])
    return found[0] if found else None


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def stored_answers(store: Store, host: str, benchmark: str, example_id: str, arms: tuple[str, ...],
                   retriever_hash: str = "") -> dict[str, str]:
    """Arm name -> the host's stored answer text for one query under one retriever configuration
    (its hash; "": the default BM25), arms without an outcome left out."""
    answers = {}
    for arm in arms:
        outcome = store.arm_outcome(host, benchmark, example_id, arm, outcome_retriever_hash(arm, retriever_hash))
        if outcome is not None:
            answers[arm] = outcome.answer if outcome.error is None else f"(error: {outcome.error})"
    return answers


@st.cache_data(ttl=STORE_TTL_S, show_spinner=False, hash_funcs=STORE_KEY)
def host_benchmarks(store: Store, host: str) -> list[str]:
    """The benchmarks a host has outcomes on (the choices of a benchmark filter)."""
    return store.outcome_benchmarks(host)


@st.cache_resource(show_spinner="Loading the BM25 index (first use only)…", hash_funcs=STORE_KEY)
def retriever(store: Store, benchmark: str) -> Retriever:
    """The benchmark's BM25 retriever."""
    from forge_core.evidence.answering import load_retriever

    return load_retriever(store, benchmark)


@st.cache_resource(show_spinner="Opening the retriever…", hash_funcs=STORE_KEY)
def configured_retriever(store: Store, benchmark: str, config_hash: str) -> AnyRetriever:
    """The configured retriever whose configuration hash is `config_hash` ("": the default BM25)
    over the benchmark's corpus: the evidence outcomes under that hash were made with."""
    if not config_hash:
        return retriever(store, benchmark)
    from forge_core.evidence.retriever_backends import open_retriever

    return open_retriever(store, retriever_config_for_hash(store, config_hash), benchmark)


@st.cache_resource(show_spinner="Loading the router (first use only)…", hash_funcs=STORE_KEY)
def loaded_checkpoint(store: Store, checkpoint_id: str) -> LoadedCheckpoint:
    """A checkpoint (its router with its preprocessing), loaded once per app process."""
    return load_checkpoint(store, checkpoint_id)


@st.cache_resource(show_spinner="Loading the embedder (first use only)…")
def embedder() -> Embedder:
    """The question embedder, loaded and run once per app process (routing then only embeds)."""
    loaded = load_embedder()
    loaded.embed(["warm-up"])  # the first forward pass is slow: keep it out of the first routing time
    return loaded


def _is_serving(host_config: HostConfig) -> bool:
    """Whether a kept host still answers (`forge_core.hosts.lifetime.is_serving`)."""
    from forge_core.hosts.lifetime import is_serving

    return is_serving(host_config)


@st.cache_resource(show_spinner="Starting the host (first use only)…", validate=_is_serving)
def served_host(host_config: HostConfig) -> HostConfig:
    """The host with a live URL; an embedded model is started once and kept while the app runs."""
    from forge_core.hosts.lifetime import serve_for_session

    return serve_for_session(host_config)


def refresh() -> None:
    """Forget cached query results after a write (a saved host, a started or cancelled job)."""
    st.cache_data.clear()
