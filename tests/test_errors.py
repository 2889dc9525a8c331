"""Only user mistakes become one line: a bug in a command reaches the user with its traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from forge_core import cli
from forge_core.errors import ForgeError, InvalidInput, MissingStep
from forge_core.store import Store


def run_forge(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> None:
    monkeypatch.setattr(sys, "argv", ["forge", *arguments])
    cli.main()


@pytest.mark.parametrize("bug", [ZeroDivisionError("division by zero"), ValueError("a numpy shape mismatch")])
def test_a_bug_in_a_command_keeps_its_traceback(bug: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    def planted(self: Store, split_seed: int = 0) -> dict:
        raise bug

    monkeypatch.setattr(Store, "benchmark_stats", planted)
    with pytest.raises(type(bug)):  # not SystemExit(2): the exception itself propagates
        run_forge(monkeypatch, "data", "stats")


def test_a_user_mistake_is_one_line_and_exit_code_2(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def refused(self: Store, split_seed: int = 0) -> dict:
        raise MissingStep("no benchmark imported: run `forge data import`")

    monkeypatch.setattr(Store, "benchmark_stats", refused)
    with pytest.raises(SystemExit) as exit_info:
        run_forge(monkeypatch, "data", "stats")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == "error: no benchmark imported: run `forge data import`"


def test_a_planted_bug_prints_a_traceback_from_the_command_line(tmp_path) -> None:
    script = textwrap.dedent("""
        import sys
        from forge_core.store import Store
        Store.benchmark_stats = lambda self, split_seed=0: 1 / 0
        sys.argv = ["forge", "data", "stats"]
        from forge_core.cli import main
        main()
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ZeroDivisionError" in result.stderr


def test_user_errors_are_forge_errors_and_values_stay_value_errors() -> None:
    from forge_core.data.importers import ImportFormatError
    from forge_core.hosts.base import HostError
    from forge_core.hosts.models import ModelError
    from forge_core.routing.checkpoints import CheckpointError
    from forge_core.store import StoreError

    for kind in (InvalidInput, MissingStep, ImportFormatError, HostError, ModelError, CheckpointError, StoreError):
        assert issubclass(kind, ForgeError)
    assert issubclass(InvalidInput, ValueError) and issubclass(MissingStep, ValueError)  # callers catching ValueError
    assert not issubclass(HostError, ValueError)  # `forge serve` answers it 502, not 400
