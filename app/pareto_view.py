"""What a Pareto page slider step recomputes, in one cached call: the scored points (overall and as drawn),
named with identical points merged, the headline numbers, the table against the mix and the chart.

Cached per request (its weights among its fields), so a step back to weights already seen redraws at once,
and a new step pays for the scoring (`data.pareto`) and these few frames only once."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from app import data
from app.data import RESULTS_CACHE_ENTRIES, STORE_KEY
from app.decision_view import named_points
from app.pareto_chart import pareto_chart
from forge_core.evaluation.cached import CachedRequest
from forge_core.reports.mix_view import hull_gap_frame
from forge_core.reports.tables import pareto_highlights
from forge_core.store import Store


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
