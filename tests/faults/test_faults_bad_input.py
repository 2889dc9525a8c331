"""Fault suite, bad input: every command refuses a user mistake with one clear line and exit code
2, and writes nothing.

Each case runs `forge_core.cli.main` in this process on a store holding the five benchmarks and
the demo outcomes, and checks: exit code 2, no traceback, an `error:` line naming the problem (or
click's `Error:` line for a malformed option), and the same row count in every table afterwards.
"""

from __future__ import annotations

import sys

import pytest

from forge_core import cli, config
from forge_core.store import Store

from support.resources import require_demo_export
from support.stores import copy_store

pytestmark = pytest.mark.faults

LONG_QUESTION = "why " * 25_000  # 100,000 characters

# (arguments, a fragment the error line must hold)
CASES: list[tuple[list[str], str]] = [
    (["ask", ""], "question"),
    (["ask", "   \n\t "], "question"),
    (["ask", LONG_QUESTION], "characters"),
    (["ask", "who\x00wrote\x07this?"], "control character"),
    (["ask", "Q?", "--host", "nope"], "unknown host 'nope'"),
    (["ask", "Q?", "--benchmark", "nope"], "nope"),
    (["ask", "Q?", "--arm", "raw:nope"], "unknown arm 'raw:nope'"),
    (["ask", "Q?", "--arm", "raw:think_low", "--host", "embedded-tiny"], "needs a thinking host"),
    (["eval", "--policy", "always_magic"], "unknown policies: always_magic"),
    (["eval", "--lambda-in", "-1"], "finite and non-negative"),
    (["eval", "--lambda-out", "nan"], "finite and non-negative"),
    (["eval", "--split", "train"], "dev or test"),
    (["eval", "--arms", "5"], "3, 6 or 12"),
    (["eval", "--protocol", "live"], "crossfit or fresh"),
    (["eval", "--protocol", "crossfit", "--folds", "1"], "folds"),
    (["eval", "--protocol", "crossfit", "--stage", "3"], "stage"),
    (["eval", "--protocol", "crossfit", "--lambda-in", "-1"], "lambda"),
    (["eval", "--protocol", "crossfit", "--benchmark", "popqa"], "--benchmark does not apply to `forge eval crossfit`"),
    (["eval", "--protocol", "fresh", "--per-benchmark", "0"], "at least 1"),
    (["eval", "--host", "nope"], "nope"),
    (["sweep", "--lambda-in", "a,b"], "comma-separated numbers"),
    (["sweep", "--lambda-out", "-0.5"], "finite and non-negative"),
    (["train", "--variant", "nope"], "unknown variant 'nope'"),
    (["train", "--stage", "2", "--parent", "ckpt-nope"], "no checkpoint 'ckpt-nope'"),
    (["train", "--stage", "3"], "stage is 1 or 2"),
    (["train", "--max-epochs", "0"], "at least 1"),
    (["train", "--stage", "2", "--steps", "-5"], "at least 1"),
    (["train", "--tau", "0"], "tau must be positive"),
    (["train", "--lambda-in", "-2"], "finite and non-negative"),
    (["train", "--host", "nope"], "nope"),
    (["enumerate", "--limit", "-1"], "--limit must be at least 1"),
    (["enumerate", "--concurrency", "abc"], "valid integer"),
    (["enumerate", "--benchmark", "nope"], "unknown benchmark"),
    (["enumerate", "--host", "nope"], "unknown host 'nope'"),
    (["enumerate", "--split", "nope"], "split must be one of"),
    (["enumerate", "--arms", "5"], "3, 6 or 12"),
    (["enumerate", "--arms", "12"], "no reasoning budget"),
    (["enumerate", "--split-seed", "9"], "split seed must be one of"),
    (["features", "--host", "nope"], "no arm outcomes"),
    (["checkpoints", "--delete", "ckpt-nope"], "no checkpoint ckpt-nope"),
    (["store", "summary", "--host", "nope"], "no outcomes for host 'nope'"),
    (["store", "summary", "--split", "nope"], "no complete nope queries"),
    (["store", "coverage", "--arms", "-3"], "3, 6 or 12"),
    (["store", "load-demo", "--source", "/nonexistent"], "no exported tables"),
    (["data", "stats", "--split-seed", "7"], "--split-seed is one of"),
    (["data", "import", "--benchmarks-dir", "/nonexistent"], "not found"),
    (["host", "add", "x", "--kind", "nope", "--model", "m"], "host kind must be"),
    (["host", "add", "x", "--model", "m", "--base-url", "ftp://x"], "http:// or https://"),
    (["host", "add", "x", "--base-url", "http://127.0.0.1:9/v1"], "--model is required"),
    (["host", "add", "embedded", "--model", "m"], "built-in host"),
    (["host", "add", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--thinking", "nope"],
     "thinking control 'nope' is not one for openai hosts"),
    (["host", "add", "x", "--model", "m", "--kind", "anthropic", "--thinking", "vllm"], "not one for anthropic hosts"),
    (["host", "add", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--depth-map", "/nonexistent.json"],
     "cannot read the depth map"),
    (["host", "add", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--thinking", "vllm",
      "--depth-map", "/nonexistent.json"], "--depth-map replaces the preset"),
    (["host", "check", "nope"], "unknown host 'nope'"),
    (["host", "check", "embedded", "--questions", "0"], "--questions is between 1 and 6"),
    (["host", "remove", "nope"], "no stored host named 'nope'"),
    (["host", "pull", "nope"], "unknown model 'nope'"),
    (["host", "serve", "nope"], "unknown host 'nope'"),
]


@pytest.fixture(scope="module")
def demo_store(imported_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The five benchmarks and the committed demo outcomes (features and checkpoints included)."""
    store = copy_store(imported_store, tmp_path_factory.mktemp("bad-input"))
    require_demo_export()
    store.load_exported(config.demo_dir())
    return store


def run_cli(arguments: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """`forge ARGUMENTS` in this process: its exit code and what it printed on stderr."""
    monkeypatch.setattr(sys, "argv", ["forge", *arguments])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize(("arguments", "fragment"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_clear_line_and_writes_nothing(arguments: list[str], fragment: str, demo_store: Store,
                                                        monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("FORGE_STORE", str(demo_store.path))
    before = demo_store.table_counts()
    code, stderr = run_cli(arguments, monkeypatch, capsys)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1 and fragment in " ".join(lines), stderr
    if errors[0].startswith("error:"):
        assert len(lines) == 1, stderr  # our own refusals are one line
    assert demo_store.table_counts() == before


def test_a_bad_training_option_is_refused_before_the_recipe_is_chosen(
        demo_store: Store, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The recommended recipe fills the defaults of `forge train` and takes seconds on a cold cache:
    an option that is wrong whatever the recipe is refused without it."""
    from forge_core.evaluation import recipe_choice

    chosen: list[tuple] = []
    monkeypatch.setattr(recipe_choice, "recommended_or_default", lambda *args: chosen.append(args))
    monkeypatch.setenv("FORGE_STORE", str(demo_store.path))
    for arguments in (["train", "--max-epochs", "0"], ["train", "--tau", "0"],
                      ["train", "--stage", "2", "--steps", "-5"]):
        code, stderr = run_cli(arguments, monkeypatch, capsys)
        assert code == 2 and "Traceback" not in stderr, stderr
    assert chosen == []
