"""Live query shows the router's guard on the query it answered: held at the fallback arm or
deviated, and why (AppTest, on the synthetic store's Lite checkpoint and a local answering host)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.policies.arm_mix import parse_mix
from forge_core.reports import checkpoint_guard as guard_module
from forge_core.routing.guard import Guard
from forge_core.store import Store

from support.answering_server import AnsweringServer
from support.app_store import FAKE_HOST, PAGE_RUN_TIMEOUT_S
from support.stores import copy_store

PAGE = Path(__file__).resolve().parents[2] / "pages" / "live_query.py"


@pytest.fixture
def live_app(tmp_path: Path, trained_store: tuple[Store, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    """The synthetic store with its Lite checkpoint as the dashboard's store, a local answering host
    configured; the store and the checkpoint's id."""
    store = copy_store(trained_store[0], tmp_path / "live-guard")
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    st.cache_data.clear()
    with AnsweringServer() as server:
        save_host_config(store, HostConfig(name=FAKE_HOST, kind="openai", model="m", base_url=server.base_url,
                                           max_retries=0, timeout_s=10.0))
        yield store, trained_store[1]


def asked() -> AppTest:
    """The Live query page after one routed question to the local host."""
    app = AppTest.from_file(str(PAGE), default_timeout=PAGE_RUN_TIMEOUT_S).run()
    next(box for box in app.selectbox if box.label == "Host").set_value(FAKE_HOST).run()
    next(area for area in app.text_area if area.label == "Your question").set_value("Who founded Rome?")
    next(button for button in app.button if button.label == "Route and answer").click().run()
    assert not app.exception and not app.error, app.exception
    return app


def texts(elements) -> str:
    return "\n".join(str(element.value) for element in elements)


def test_the_guard_says_whether_it_held_the_query_and_why(live_app: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = live_app
    app = asked()
    result = app.session_state["live_history"][-1]
    guard = guard_module.checkpoint_guard(store, checkpoint_id)  # fitted on the checkpoint's dev queries
    assert f"Guard (risk 20%, fallback {guard.fallback_arm}" in texts(app.caption) + texts(app.warning)
    assert guard.why(result.arm, result.margin) in texts(app.caption) + texts(app.warning)

    fallback = next(arm for arm in result.probabilities if arm != result.arm)
    double = Guard(fallback, result.margin + 0.5, 0.2, 40, 4)  # a test double: a threshold above this margin
    monkeypatch.setattr(guard_module, "checkpoint_guard", lambda *args, **kwargs: double)
    st.cache_data.clear()
    held = asked()
    warning = texts(held.warning)
    assert f"held at the fallback {fallback}" in warning
    assert f"the guarded router would have answered with {fallback}" in warning


def test_a_mix_fallback_names_the_arm_the_mix_drew_for_the_question(live_app: tuple,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store, checkpoint_id = live_app
    app = asked()
    next(radio for radio in app.radio if radio.label == "Guard fallback").set_value("mix").run()
    assert not app.exception, app.exception
    result = app.session_state["live_history"][-1]
    guard = guard_module.checkpoint_guard(store, checkpoint_id, fallback="mix")
    mix = parse_mix(guard.mix, len(result.probabilities))
    drawn = mix.arm_for("Who founded Rome?")[0].name  # as `forge serve --guard-fallback mix` draws it
    shown = texts(app.caption) + texts(app.warning)
    assert f"fallback the mix {mix.arms[0].name} {mix.shares[0]:.0%}" in shown  # the shares, in the guard's line
    assert f"The cost-matched mix drew {drawn} for this question" in shown
    assert guard.drawn(drawn).why(result.router_arm, result.margin) in shown

    fallback = next(arm for arm in result.probabilities if arm != result.router_arm)
    double = Guard(fallback, result.margin + 0.5, 0.2, 40, 4, mix=f"{fallback}=1")  # the mix draws `fallback`
    monkeypatch.setattr(guard_module, "checkpoint_guard", lambda *args, **kwargs: double)
    st.cache_data.clear()
    held = asked()
    next(radio for radio in held.radio if radio.label == "Guard fallback").set_value("mix").run()
    warning = texts(held.warning)
    assert f"fallback the mix {fallback} 100%" in warning and f"{fallback}=1" not in warning  # the mix in words, once
    assert f"held at the fallback {fallback} (drawn from the mix)" in warning
    assert f"the guarded router would have answered with {fallback}." in warning
