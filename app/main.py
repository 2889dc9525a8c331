"""FORGE dashboard entry script (`forge app` runs it with Streamlit): the page navigation."""

from pathlib import Path

import streamlit as st

from app.step_prefetch import give_way
from app.ui import PAGES_DIR

# the icon is a file served inline: a :material/ icon would be fetched from a font server (the app stays offline)
st.set_page_config(page_title="FORGE", page_icon=str(Path(__file__).with_name("forge_icon.svg")), layout="wide")

navigation = st.navigation({
    "Data": [
        st.Page(PAGES_DIR / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page(PAGES_DIR / "enumerate.py", title="Enumerate", icon=":material/playlist_play:",
                url_path="enumerate"),
        st.Page(PAGES_DIR / "hosts.py", title="Hosts", icon=":material/dns:", url_path="hosts"),
    ],
    "Routing": [
        st.Page(PAGES_DIR / "live_query.py", title="Live query", icon=":material/chat:", url_path="live-query"),
        st.Page(PAGES_DIR / "train.py", title="Train", icon=":material/model_training:", url_path="train"),
        st.Page(PAGES_DIR / "pareto.py", title="Pareto", icon=":material/scatter_plot:", url_path="pareto"),
        st.Page(PAGES_DIR / "action_map.py", title="Action map", icon=":material/map:", url_path="action-map"),
        st.Page(PAGES_DIR / "queries.py", title="Queries", icon=":material/table_rows:", url_path="queries"),
        st.Page(PAGES_DIR / "transfer.py", title="Transfer", icon=":material/swap_horiz:", url_path="transfer"),
    ],
    "Deploy": [
        st.Page(PAGES_DIR / "traffic.py", title="Traffic", icon=":material/monitoring:", url_path="traffic"),
    ],
})
give_way()  # a next Pareto step waiting to be computed is not wanted while a page runs (the Pareto page asks again)
navigation.run()
