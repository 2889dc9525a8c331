"""A command's burst of store reads opens the store file once (`cli.output.open_store` keeps it
open between reads, as the dashboard's store does), instead of once a read: counted, not timed."""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from forge_core import cli
from forge_core.cli import output
from forge_core.store import Store

from support.stores import copy_store


def test_a_report_command_opens_the_store_file_once(outcome_store: Store, tmp_path, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    store = copy_store(outcome_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    monkeypatch.setattr(output, "KEEP_STORE_OPEN_S", 60.0)  # a busy machine's slow step between reads closes nothing
    opened: list[str] = []
    connect = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda database=":memory:", *args, **kwargs: opened.append(
        str(database)) or connect(database, *args, **kwargs))
    result = CliRunner().invoke(cli.app, ["store", "summary", "--host", "synthetic-host", "--split", "test",
                                          "--json"])
    assert result.exit_code == 0, result.output
    assert opened.count(str(store.path)) == 1, opened
