"""Numbers that replay: every generated region of docs/results.md, docs/results-rewards-grounding.md
and docs/bench.md is what scripts/results_tables.py generates from the committed demo store
(`forge data import && forge store load-demo`) and the committed outputs (bench/results,
data/demo/reports), so a table or a figure that no longer matches its runs fails here. The
documents are generated once for the module, then compared one by one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from support.offline_forge import OfflineDemo
from support.resources import require_demo_export
from support.stores import copy_store

GENERATOR = Path(__file__).resolve().parent.parent / "scripts" / "results_tables.py"
DOCUMENTS = ("results.md", "results-rewards-grounding.md", "bench.md", "serving.md")

pytestmark = pytest.mark.e2e  # the whole demo store: every document generated from it (about 90 s on 2 busy cores);
# scripts/test.sh runs the e2e tests after the default suite


def results_tables(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """scripts/results_tables.py as a module (scripts/ is no package: on the path for its
    `results_docs`; it must be in sys.modules while its module runs)."""
    monkeypatch.syspath_prepend(str(GENERATOR.parent))
    spec = importlib.util.spec_from_file_location("results_tables", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def documents(offline_demo: OfflineDemo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Per document name: (committed text, the diff against the text the demo store gives). The store
    is a private copy of the session's fresh demo store (`offline_demo`; the generator adds rows, those
    of the grounding document's derived host), the cache is that demo's: the crossfit reports its
    commands kept there (printing a run beside its sibling split seeds) are read, not computed again."""
    require_demo_export()
    store = copy_store(offline_demo.store, tmp_path_factory.mktemp("results_docs"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FORGE_STORE", str(store.path))
        patch.setenv("FORGE_CACHE_DIR", str(offline_demo.cache_dir))
        module = results_tables(patch)
        return {path.name: (committed, module.difference(path, committed, generated))
                for path, (committed, generated) in module.documents_from_store().items()}


def test_the_generator_covers_both_documents(documents: dict[str, tuple[str, str]]) -> None:
    assert sorted(documents) == sorted(DOCUMENTS)
    assert all("<!-- generated:" in committed for committed, _ in documents.values())


@pytest.mark.parametrize("name", DOCUMENTS)
def test_the_document_says_what_the_demo_store_gives(documents: dict[str, tuple[str, str]], name: str) -> None:
    assert documents[name][1] == "", documents[name][1]


def test_the_check_refuses_a_missing_store_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FORGE_STORE", str(tmp_path / "none.duckdb"))
    with pytest.raises(SystemExit, match="no store at .*forge data import && forge store load-demo"):
        results_tables(monkeypatch).main(["--check"])
