"""What a page shows in place of a view the background process is still computing
(`forge_core.precompute.background_views`): its progress, refreshed until the view is ready, when
the page reruns and reads it. The rest of the page and the other pages work meanwhile."""

from __future__ import annotations

import streamlit as st

from forge_core import config
from forge_core.precompute.background_views import views_progress

REFRESH_S = 2  # how often a waiting page looks at the progress again


def views_ready(*names: str) -> bool:
    """False while the background process still computes one of the named views (`view_cache.view_name`);
    True when they are ready or no process runs (the page then computes what it needs itself)."""
    progress = views_progress(config.cache_dir())
    return progress is None or not progress.waiting_for(*names)


def waiting_for_views(*names: str) -> bool:
    """True, after drawing the progress in place, while the background process still computes one of
    the named views (`views_ready`); False when they are ready or no process runs."""
    if views_ready(*names):
        return False
    _progress_until_ready(names)
    return True


@st.fragment(run_every=REFRESH_S)
def _progress_until_ready(names: tuple[str, ...]) -> None:
    progress = views_progress(config.cache_dir())
    if progress is None or not progress.waiting_for(*names):
        st.rerun()  # the whole page, which now reads the view
    st.progress(progress.fraction, text=progress.line())
    st.caption("This part of the page appears by itself when its view is ready; the other pages work meanwhile.")
