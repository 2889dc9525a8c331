"""Numbers that replay: every generated region of docs/results.md and
docs/results-rewards-grounding.md is what scripts/results_tables.py generates from the committed
demo store (`forge data import && forge store load-demo`), so a table or a figure that no longer
matches its runs fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from forge_core import config
from forge_core.store import Store

from support.resources import require_demo_export
from support.stores import copy_store

GENERATOR = Path(__file__).resolve().parent.parent / "scripts" / "results_tables.py"


def results_tables(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """scripts/results_tables.py as a module (scripts/ is no package; its dataclasses need it in
    sys.modules while they are made)."""
    spec = importlib.util.spec_from_file_location("results_tables", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def demo_store(imported_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """The five benchmarks and the committed demo export, as FORGE_STORE."""
    require_demo_export()
    store = copy_store(imported_store, tmp_path / "demo")
    store.load_export_once(config.demo_dir())
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    return store


def test_the_documents_say_what_the_demo_store_gives(demo_store: Store, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    assert results_tables(monkeypatch).main(["--check"]) == 0, capsys.readouterr().out
