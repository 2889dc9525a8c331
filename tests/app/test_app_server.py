"""The process `forge app` starts (`app.server`): what it does before the first visitor comes."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from app import server


def test_the_preloaded_modules_are_set_apart_from_later_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "runtime", SimpleNamespace(exists=lambda: True))  # the server is up
    gc.unfreeze()
    try:
        server._preload()
        assert gc.get_freeze_count() > 0  # each full collection walked them all: 0.1 to 0.2 s each
    finally:
        gc.unfreeze()
