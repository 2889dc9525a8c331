"""The router a user chose, shared by every page: each page opens on the host's default router (the
one marked default, else `forge_core.routing.checkpoints.default_router`'s fallback) until the user
picks another, and keeps that pick across pages (Streamlit forgets a widget's value when a page
without it runs, so the pick lives under a key of its own and is copied back into each picker)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app import data
from forge_core.reports.checkpoint_views import checkpoint_names
from forge_core.store import Store

KEPT = "router_choice_{host}"  # session state: the checkpoint id the user picked for a host


def chosen(store: Store, host: str, ids: list[str]) -> str | None:
    """The host's router for a picker offering `ids`: the user's pick when offered, else the host's
    default router when offered, else the first id (None without any)."""
    for candidate in (st.session_state.get(KEPT.format(host=host)), data.default_router(store, host)):
        if candidate in ids:
            return candidate
    return ids[0] if ids else None


def picker(container: Any, store: Store, host: str, checkpoints: pd.DataFrame, page: str, label: str = "Router",
           help: str | None = None) -> str | None:
    """A select of `checkpoints` (a `Store.checkpoints()` frame) by their one name, opening on
    `chosen` and keeping the user's pick for every page; returns the checkpoint id (None without any)."""
    names = checkpoint_names(checkpoints)
    ids = list(names)
    if not ids:
        return None
    widget, kept = f"{page}_router_select", KEPT.format(host=host)
    st.session_state[widget] = chosen(store, host, ids)
    default = data.default_router(store, host)
    return container.selectbox(label, ids, key=widget, format_func=lambda i: names[i] + (" (default)" if i == default
                                                                                          else ""),
                               help=help, on_change=_keep, args=(widget, kept))


def _keep(widget: str, kept: str) -> None:
    st.session_state[kept] = st.session_state[widget]
