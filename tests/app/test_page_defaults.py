"""A page opens where the command line starts (#56): every widget of the Train and Enumerate pages
that stands for a `forge train` / `forge enumerate` option opens on that option's default (the
parser's, as tests/cli/test_cli_defaults.py reads it), and the Train page's warm-start arms on the
recommended recipe's, which `forge train` takes when `--warm-arms` is not given."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import typer
from streamlit.testing.v1 import AppTest

from forge_core.cli import app as forge_cli
from forge_core.config import PROJECT_ROOT, cache_dir
from forge_core.evaluation.recipe_choice import recommended_or_default
from forge_core.store import Store

from support.app_store import FAKE_HOST, PAGE_RUN_TIMEOUT_S, build_app_store

PAGES = PROJECT_ROOT / "pages"

# Train page widget label -> the `forge train` option it stands for
TRAIN_STAGE1 = {"lambda_in": "lambda_in", "lambda_out": "lambda_out", "tau": "tau", "Seed": "seed",
                "Target": "target", "Max epochs": "max_epochs", "Patience": "patience", "Features": "variant",
                "Alphabet": "arms", "Stage": "stage"}
TRAIN_STAGE2 = {"Algorithm": "algorithm", "Steps": "steps", "Rewards": "rewards", "beta": "beta",
                "Entropy coefficient": "entropy_coef"}
# Enumerate page widget label -> the `forge enumerate` option (None on the command line: "no limit")
ENUMERATE = {"Split": "split", "Alphabet": "arms", "Split seed": "split_seed", "Queries in all": "limit",
             "Queries per benchmark": "per_benchmark", "Max host calls": "max_calls", "Max tokens": "max_tokens",
             "Run the four host probes too": "probes"}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory, benchmarks_root: Path) -> Path:
    path = tmp_path_factory.mktemp("defaults") / "store.duckdb"
    build_app_store(path, benchmarks_root)  # 6-arm outcomes of one host, "fake"
    return path


def option_defaults(path: tuple[str, ...]) -> dict[str, object]:
    """The default of every option of `forge <path>`, as the parser holds it (as tests/cli/test_cli_defaults.py)."""
    command = typer.main.get_command(forge_cli)
    for name in path:
        command = command.commands[name]
    return {param.name: param.default for param in command.params}


def page(name: str, store_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("FORGE_STORE", str(store_path))
    st.cache_data.clear()
    return AppTest.from_file(str(PAGES / name), default_timeout=PAGE_RUN_TIMEOUT_S).run()


def widget_values(app: AppTest) -> dict[str, object]:
    """Every input widget's value by label."""
    widgets = [*app.selectbox, *app.number_input, *app.checkbox, *app.toggle, *app.radio,
               *app.get("segmented_control")]
    return {widget.label: widget.value for widget in widgets}


def disagreements(values: dict[str, object], labels: dict[str, str], defaults: dict[str, object]) -> dict:
    missing = set(labels) - set(values)
    assert not missing, f"no widget labelled {missing}: {sorted(values)}"
    return {label: (values[label], defaults[option]) for label, option in labels.items()
            if values[label] != defaults[option]}


def test_the_train_pages_widgets_open_on_forge_trains_defaults(store_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = option_defaults(("train",))
    app = page("train.py", store_path, monkeypatch)
    assert not app.exception, app.exception
    values = widget_values(app)
    assert values["Host"] == FAKE_HOST
    assert not disagreements(values, TRAIN_STAGE1, defaults), "page vs `forge train` default"
    recommended = recommended_or_default(Store(store_path), FAKE_HOST, defaults["arms"], "bm25", cache_dir())
    assert defaults["warm_arms"] is None  # the command line then takes the recommended recipe's
    assert values["Warm-start arms"] == recommended.warm_start_arms

    app.get("segmented_control")[0].set_value(2).run()  # Stage 2's knobs
    assert not app.exception, app.exception
    assert not disagreements(widget_values(app), TRAIN_STAGE2, defaults), "page vs `forge train` default"


def test_the_enumerate_pages_widgets_open_on_forge_enumerates_defaults(store_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    app = page("enumerate.py", store_path, monkeypatch)
    assert not app.exception, app.exception
    assert not disagreements(widget_values(app), ENUMERATE, option_defaults(("enumerate",))), \
        "page vs `forge enumerate` default"
