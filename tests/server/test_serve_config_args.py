"""A Serve config file's `args` become the settings `forge serve` would make from the same options,
and a wrong one is refused in one line (no Ray needed: the application is built by tests/cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge_core.errors import InvalidInput
from forge_core.server.deployment import WeightsRequest
from forge_core.server.serve_config import serve_settings_of_args
from forge_core.store import Store


@pytest.fixture
def store_file(tmp_path: Path) -> str:
    Store(tmp_path / "store.duckdb").examples("popqa")  # creates the file with its tables
    return str(tmp_path / "store.duckdb")


def test_args_become_the_settings_forge_serve_makes(store_file: str, tmp_path: Path) -> None:
    path, settings = serve_settings_of_args({"store": store_file, "host": "my-vllm", "benchmark": "musique,popqa",
                                             "budget_tokens": 300, "traffic_dir": str(tmp_path / "traffic")})
    _, guarded = serve_settings_of_args({"store": store_file, "router": "ckpt-1", "lambda_in": 0.6, "lambda_out": 0.6,
                                         "guard": 0.2})
    assert (guarded.router, guarded.guard) == ("ckpt-1", 0.2)
    assert path == Path(store_file)
    assert (settings.host, settings.router, settings.arm, settings.retriever) == ("my-vllm", "lite", None, "bm25")
    assert settings.benchmark == "musique+popqa" and settings.traffic_dir == tmp_path / "traffic"
    assert settings.weights == WeightsRequest(budget_tokens=300.0)


@pytest.mark.parametrize(("args", "says"), [
    ({"store": "S", "port": 8100}, "args take host, router, arm"),
    ({}, "need `store`"),
    ({"store": "/no/such/store.duckdb"}, "store /no/such/store.duckdb is no file"),
    ({"store": "S", "budget_tokens": "many"}, "budget_tokens is a number, not 'many'"),
    ({"store": "S", "budget_tokens": -5}, "token target must be a positive number"),
    ({"store": "S", "arm": "raw:no_think", "router": "lite"}, "router needs routing"),
])
def test_a_wrong_arg_is_refused_in_one_line(store_file: str, args: dict, says: str) -> None:
    args = {name: store_file if value == "S" else value for name, value in args.items()}
    with pytest.raises(InvalidInput) as refused:
        serve_settings_of_args(args)
    assert says in str(refused.value) and "\n" not in str(refused.value)
