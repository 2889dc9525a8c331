"""What a Pareto page slider step recomputes, in one cached call: the scored points (overall and as drawn),
named with identical points merged, the headline numbers, the table against the mix and the chart.

Cached per request (its weights among its fields), so a step back to weights already seen redraws at once,
and a new step pays for the scoring (`data.pareto`) and these few frames only once; `prefetch_next_step` pays
for the next step while the browser draws this one."""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable

import pandas as pd
import streamlit as st

from app import data
from app.data import RESULTS_CACHE_ENTRIES, STORE_KEY
from app.decision_view import named_points
from app.pareto_chart import pareto_chart
from app.step_prefetch import next_weights, prefetch
from app.views_progress import views_ready
from forge_core.evaluation.cached import CachedRequest
from forge_core.precompute.view_cache import view_name
from forge_core.reports.mix_view import hull_gap_frame
from forge_core.reports.tables import pareto_highlights
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

FIRST_DRAW_S = 2.0  # how long the next step's computation waits after the page's first run: the browser draws it


@dataclasses.dataclass(frozen=True)
class ParetoFrames:
    """The Pareto page's weighted frames for one request."""

    overall: pd.DataFrame  # every policy's point over all benchmarks
    shown: pd.DataFrame  # the points as drawn: overall, or one set per benchmark
    named: pd.DataFrame  # `shown` named, identical points merged (`named_points`)
    highlights: dict  # `pareto_highlights` of `overall`
    against_hull: pd.DataFrame  # `hull_gap_frame` of `named`
    chart: tuple[pd.DataFrame, dict]  # `pareto_chart` of `named`: its frame and Vega-Lite spec


@st.cache_data(show_spinner=False, max_entries=RESULTS_CACHE_ENTRIES, hash_funcs=STORE_KEY)
def pareto_frames(store: Store, version: int, request: CachedRequest, by_benchmark: bool, color_by: str,
                  checkpoint_names: dict[str, str]) -> ParetoFrames:
    """The frames of a Cached request (`version`: see `data.store_version`), its checkpoints shown by
    `checkpoint_names`, drawn per benchmark when `by_benchmark`, coloured by `color_by`."""
    overall = data.pareto(store, version, request, False)
    shown = data.pareto(store, version, request, True) if by_benchmark else overall
    named = named_points(shown, checkpoint_names)
    return ParetoFrames(overall, shown, named, pareto_highlights(overall), hull_gap_frame(named),
                        pareto_chart(named, by_benchmark, color_by))


def prefetch_next_step(store: Store, version: int, request: CachedRequest, by_benchmark: bool, color_by: str,
                       checkpoint_names: dict[str, str], previous: CostWeights | None, decide: bool,
                       budget_for: Callable[[CostWeights], float | None], conditioned: tuple[str, ...]) -> None:
    """Compute in the background (`app.step_prefetch`) what the Pareto page's next slider step shows if
    the sliders move again as they moved from `previous` to the request's weights: its frames and, when
    `decide`, its decision (within the budget `budget_for` gives those weights, read here: it reads the
    session; not while the background process trains the fold routers it needs, which would train them
    twice); and the `conditioned` checkpoints' reliability bases (loaded once per store version; pass
    them only while their tables are shown: a base takes a few tenths of a second to load)."""
    settings = request.settings
    upcoming = next_weights(settings.weights, previous)
    if upcoming is None:
        return
    ahead = dataclasses.replace(request, settings=dataclasses.replace(settings, weights=upcoming))
    budget = budget_for(upcoming)
    decide = decide and views_ready(view_name("any_weights", settings.host))

    parts = [lambda: pareto_frames(store, version, ahead, by_benchmark, color_by, checkpoint_names)]
    if decide:
        parts.append(lambda: data.decision_at(store, version, settings.host, upcoming, settings.accounting,
                                              settings.retriever, budget))
    parts += [functools.partial(data.reliability_base, store, version, checkpoint_id) for checkpoint_id in conditioned]
    # after the page's first run, the next step loads the routing stack (torch, scikit-learn: seconds of CPU
    # holding the interpreter): started at once, it slowed the browser's drawing of the page it follows
    # and each step waits for this run to end: computed meanwhile, it held back the run's last messages
    prefetch(*parts, after_s=FIRST_DRAW_S if previous is None else 0.0, after_run=threading.current_thread())
