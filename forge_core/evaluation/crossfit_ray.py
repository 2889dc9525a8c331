"""Folds as Ray tasks. A crossfit run, or a grid of runs (`forge eval crossfit --engine ray`, with
comma-separated weights or split seeds): each fold's policies are fitted and scored in a task of
their own, on one core, every fold of every run sent at once, and the driver stores each fold's rows
under its run as it arrives, the only process that writes the store. The fold trainings behind `forge decide --engine
ray` (the weight sweep of a calibration, the conditioned routers that decide at any weights) go
through `map_folds_on_ray` the same way: one task a fold, the results back in fold order.

A task gets its fold's context with the features already read (the driver reads them once, before
any task starts): a task reads nothing from the store. Each fold is fitted as in one process, from
the same seeds with torch on one thread (BLAS too: `on_one_thread`), so a run gives the same rows,
bit for bit, on either engine, and an interrupted run resumes on either.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import pandas as pd

from forge_core.engines import ray_session
from forge_core.evaluation.fold_rows import fold_rows
from forge_core.policies.base import Policy
from forge_core.policies.context import EvalContext
from forge_core.store import Store, job_run

log = logging.getLogger(__name__)

BASELINE_VARIANT = "lite"  # the features the baselines that learn (ridge, the classifiers) read


class StoreLeftOnDriver:
    """Stands for the store in a context sent to a Ray task: the driver has read what the task
    needs. Any read says so, rather than opening the file from a second process."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"a fold task on Ray reads nothing from the store (it asked for Store.{name}): "
                           "read it on the driver before the task is sent")


def needed_variants(policies: list[Policy]) -> set[str]:
    """The feature variants the policies of a fold read: each router's own, and the baselines'."""
    return {BASELINE_VARIANT} | {variant for policy in policies if (variant := getattr(policy, "live_variant", None))}


def shipped(context: EvalContext, variants: set[str]) -> EvalContext:
    """The context as a Ray task gets it: the features of `variants`, the training-free gates'
    draft signals (`forge gate-probes`' drafts) and the questions (a mix guard's draws) read here,
    on the driver, and no store."""
    from forge_core.policies.gates import draft_signals
    from forge_core.policies.guard import row_questions

    for variant in variants:
        context.features(variant)
    draft_signals(context)  # kept in the context's weight-free results, which the task gets with it
    row_questions(context)
    return dataclasses.replace(context, store=StoreLeftOnDriver())


def on_one_thread(function: Callable[..., Any], *arguments: Any) -> Any:
    """`function(*arguments)` with torch and BLAS on one thread each (a Ray task), as `forge
    decide`'s in-process folds run: a ridge fit on two BLAS threads can differ in its last bits."""
    from forge_core.training.threads import one_thread

    with one_thread():
        return function(*arguments)


def fold_rows_task(context: EvalContext, rows: Any, fitted: list[Policy], stored_names: set[str]) -> pd.DataFrame:
    """One fold on a Ray worker: fit `fitted` in order and score those named in `stored_names`."""
    return on_one_thread(fold_rows, context, rows, fitted, [p for p in fitted if p.name in stored_names], None)


def map_folds_on_ray(function: Callable[..., Any], folds: list[tuple], on_fold: Callable[[int, int], None] | None,
                     address: str | None = None) -> list[Any]:
    """`function(*arguments)` for each fold's `arguments` (contexts `shipped`), each a Ray task on
    one core (`on_one_thread`); the results in the order of `folds`, `on_fold(done, total)` as
    each task ends. An interruption cancels the tasks not yet ended."""
    ray = ray_session(address)
    task = ray.remote(num_cpus=1, max_retries=2)(on_one_thread)
    pending = {task.remote(function, *arguments): index for index, arguments in enumerate(folds)}
    results: list[Any] = [None] * len(folds)
    try:
        while pending:
            [ready], _ = ray.wait(list(pending), num_returns=1)
            results[pending.pop(ready)] = ray.get(ready)
            if on_fold:
                on_fold(len(folds) - len(pending), len(folds))
    finally:
        for unfinished in pending:
            ray.cancel(unfinished)
    return results


def grid_job_params(plans: list[Any]) -> dict:
    """The job row's parameters (`plans`: `crossfit.CrossfitPlan`s, a module that imports this one):
    one run's id and settings, or a grid's ids and settings."""
    if len(plans) == 1:
        return {"run_id": plans[0].run_id, **plans[0].settings, "engine": "ray"}
    return {"run_ids": [plan.run_id for plan in plans], "runs": [plan.settings for plan in plans], "engine": "ray"}


def run_plans_on_ray(store: Store, plans: list[Any], on_fold: Callable[[int, int], None] | None,
                     address: str | None = None) -> None:
    """Fit and store every run's missing folds (`crossfit.CrossfitPlan.work`), all sent at once as Ray tasks,
    one job in the store; a fold is stored whole under its run as soon as its task ends, so an
    interruption keeps every finished fold of every run. `on_fold(done, total)` counts the folds of
    all the runs."""
    ray = ray_session(address)
    task = ray.remote(num_cpus=1, max_retries=2)(fold_rows_task)
    total = sum(len(plan.work) for plan in plans)
    with job_run(store, "crossfit", grid_job_params(plans), total) as job:
        pending = {}
        for plan in plans:
            for fold, context, fitted, missing in plan.work:
                if missing:
                    pending[task.remote(shipped(context, needed_variants(fitted)), context.rows("test"), fitted,
                                        {p.name for p in missing})] = (plan.run_id, fold)
        done = total - len(pending)
        log.info("crossfit %s: %d folds as Ray tasks", ", ".join(plan.run_id for plan in plans), len(pending))
        try:
            while pending:
                [ready], _ = ray.wait(list(pending), num_returns=1)
                run_id, fold = pending.pop(ready)
                store.write_crossfit_fold(run_id, fold, ray.get(ready))
                done += 1
                job.progress(done)
                if on_fold:
                    on_fold(done, total)
        finally:
            for unfinished in pending:
                ray.cancel(unfinished)
        job.end("finished", ", ".join(plan.run_id for plan in plans))
