"""Page sections drawn only while their expander is open (`st.expander(key=..., on_change="rerun")`),
opened in AppTest."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

TRAIN_REWARDS = "train-rewards"  # the Train page's proxy-reward audit and judging form
TRAIN_COMPARISON = "train-compare"  # the Train page's comparison of two checkpoints
HOST_EDIT = "hosts-edit"  # the Hosts page's form that adds or edits a host
HOST_PRICES = "hosts-prices"  # the Hosts page's prices form
HOST_TEST = "hosts-test"  # the Hosts page's one-call test
HOST_DEPTHS = "hosts-depths"  # the Hosts page's depth check
RETRIEVER_DEFAULT = "retrievers-default"  # the Hosts page's choice of a host's default retriever
RETRIEVER_EDIT = "retrievers-edit"  # the Hosts page's form that adds, edits or removes a retriever
RETRIEVER_CHECK = "retrievers-check"  # the Hosts page's one-query retriever check
MAP_CLUSTERS = "action-map-clusters"  # the Action map page's action mix per cluster
MAP_CROSSFIT = "action-map-crossfit"  # the Action map page's map coloured by a crossfit run's decisions
TRANSFER_POLICIES = "transfer-policies"  # the Transfer page's table of every policy


def opened(app: AppTest, key: str) -> AppTest:
    """The page with the expander `key` open (run again when it was closed); it stays open on later runs."""
    if not app.session_state[key]:
        app.session_state[key] = True
        app.run()
    return app
