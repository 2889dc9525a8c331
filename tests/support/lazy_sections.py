"""Page sections drawn only while their expander is open (`st.expander(key=..., on_change="rerun")`),
opened in AppTest."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

TRAIN_REWARDS = "train-rewards"  # the Train page's proxy-reward audit and judging form
TRAIN_COMPARISON = "train-compare"  # the Train page's comparison of two checkpoints


def opened(app: AppTest, key: str) -> AppTest:
    """The page with the expander `key` open (run again when it was closed); it stays open on later runs."""
    if not app.session_state[key]:
        app.session_state[key] = True
        app.run()
    return app
