"""Registry helpers shared by the CLI and the Hosts page: removing a host with its prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import remove_host, save_host_config, save_host_prices
from forge_core.records import HostPrices
from forge_core.store import Store


def test_remove_host_forgets_its_configuration_and_prices(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    save_host_config(store, HostConfig(name="remote", kind="openai", model="m", base_url="http://127.0.0.1:1/v1"))
    save_host_prices(store, HostPrices("remote", 1.0, 2.0))
    save_host_prices(store, HostPrices("embedded", 0.5, 0.5))
    remove_host(store, "remote")
    assert store.host_config("remote") is None and store.host_prices("remote") is None
    with pytest.raises(InvalidInput, match="no stored host named 'embedded'"):
        remove_host(store, "embedded")
    assert store.host_prices("embedded") == HostPrices("embedded", 0.5, 0.5)
