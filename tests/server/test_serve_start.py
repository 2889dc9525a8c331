"""`forge_core.server.ray_serve.start_serve`: Serve's fixed 60 s wait for its HTTP proxy, missed on a
busy machine, is not the end of `forge serve --engine ray`."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from forge_core.server.ray_serve import start_serve


def recording_serve(monkeypatch: pytest.MonkeyPatch, timeouts: int) -> list[dict]:
    """A stand-in `ray.serve` (for this test only) whose first `timeouts` starts raise Serve's
    TimeoutError; every start's options, recorded."""
    starts: list[dict] = []

    def start(**options) -> None:
        starts.append(options)
        if len(starts) <= timeouts:
            raise TimeoutError("HTTP proxies not available after 60s.")

    serve = SimpleNamespace(start=start)
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(serve=serve))
    monkeypatch.setitem(sys.modules, "ray.serve", serve)
    return starts


def test_a_proxy_slower_than_serves_wait_is_joined_by_a_second_start(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = recording_serve(monkeypatch, timeouts=1)
    start_serve("127.0.0.1", 8123)
    assert starts == [{"http_options": {"host": "127.0.0.1", "port": 8123}}] * 2


def test_a_proxy_up_in_time_is_started_once(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = recording_serve(monkeypatch, timeouts=0)
    start_serve("0.0.0.0", 8000)
    assert starts == [{"http_options": {"host": "0.0.0.0", "port": 8000}}]


def test_a_second_timeout_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    recording_serve(monkeypatch, timeouts=2)
    with pytest.raises(TimeoutError):
        start_serve("127.0.0.1", 8123)
