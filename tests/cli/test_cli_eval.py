"""`forge eval cached | crossfit | fresh`: one subcommand per protocol, each with only its own options."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forge_core import cli
from forge_core.errors import InvalidInput


def options_of(subcommand: str) -> str:
    result = CliRunner().invoke(cli.app, ["eval", subcommand, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_each_protocol_takes_only_its_own_options() -> None:
    crossfit, cached, fresh = options_of("crossfit"), options_of("cached"), options_of("fresh")
    for option in ("--policy", "--repeats", "--per-benchmark", "--split ", "--benchmark"):
        assert option not in crossfit
    assert "--folds" in crossfit and "--stage2-steps" in crossfit and "--accounting" in crossfit
    assert "--repeats" in cached and "--folds" not in cached and "--per-benchmark" not in cached
    assert "--per-benchmark" in fresh and "--repeats" not in fresh and "--folds" not in fresh


@pytest.mark.parametrize(("arguments", "message"), [
    (["eval", "--protocol", "crossfit", "--policy", "forge_lite"], "--policy does not apply to `forge eval crossfit`"),
    (["eval", "--protocol", "cached", "--folds", "3"], "--folds does not apply to `forge eval cached`"),
    (["eval", "--protocol", "fresh", "--repeats"], "--repeats does not apply to `forge eval fresh`"),
    (["eval", "--json", "crossfit"], "give the options after `forge eval crossfit`"),
    (["eval", "--protocol", "live"], "--protocol is cached, crossfit or fresh"),
])
def test_options_of_another_protocol_are_refused(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(cli.app, arguments)
    assert isinstance(result.exception, InvalidInput) and message in str(result.exception)
