"""`forge_core.engines.ray_session`: a local Ray instance runs its workers at the user's priority and
gives Serve's proxy time to answer its checks on a busy machine; a cluster FORGE joins keeps its own
settings."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

from forge_core import engines


def recording_ray(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """A stand-in `ray` module (for this test only) that records how it was started; the local
    instance's settings and RAY_ADDRESS unset, and restored after the test."""
    for name in (*engines.LOCAL_RAY_SETTINGS, "RAY_ADDRESS"):
        monkeypatch.setenv(name, "")  # recorded, so the test's own settings are undone
        monkeypatch.delenv(name)
    calls: list[dict] = []
    fake = SimpleNamespace(is_initialized=lambda: bool(calls), init=lambda **kwargs: calls.append(kwargs))
    monkeypatch.setitem(sys.modules, "ray", fake)
    return calls


def test_a_local_instance_is_set_for_a_busy_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = recording_ray(monkeypatch)
    monkeypatch.setenv("RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S", "45")  # the user's own setting stands
    engines.ray_session()
    assert calls[0]["address"] == "local"  # a new instance, not the one a `ray start` left in /tmp/ray
    assert os.environ["RAY_worker_niceness"] == "0"
    assert os.environ["RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"] == "120"
    assert os.environ["RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S"] == "45"


def test_joining_a_cluster_leaves_its_settings_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = recording_ray(monkeypatch)
    engines.ray_session("10.0.0.5:6379")
    assert calls[0]["address"] == "10.0.0.5:6379"
    assert not set(engines.LOCAL_RAY_SETTINGS) & set(os.environ)
