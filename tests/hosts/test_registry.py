"""Registry helpers shared by the CLI and the Hosts page: removing a host with its prices, changing one
side of its prices; a configuration's alphabet size, which its hash ignores."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from forge_core.errors import InvalidInput
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import config_hash, remove_host, save_host_config, save_host_prices, updated_prices
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


def test_updated_prices_change_the_sides_given_and_check_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    assert updated_prices(store, "embedded", None, None) is None
    assert updated_prices(store, "embedded", 2.0, None) == HostPrices("embedded", 2.0, 0.0)
    save_host_prices(store, HostPrices("embedded", 1.0, 3.0))
    assert updated_prices(store, "embedded", None, 4.0) == HostPrices("embedded", 1.0, 4.0)
    with pytest.raises(InvalidInput, match="--price-in must be a number of US dollars"):
        updated_prices(store, "embedded", -1.0, None)


def test_alphabet_size_follows_the_depth_map_and_stays_out_of_the_stored_fields() -> None:
    thinking = HostConfig(name="h", kind="openai", model="m", thinking="vllm")
    assert thinking.alphabet_size == 12 and HostConfig(name="h", kind="openai", model="m").alphabet_size == 6
    assert "alphabet_size" not in dataclasses.asdict(thinking)
    assert config_hash(thinking) == "c2f111f90288"  # the hash from before the property existed
