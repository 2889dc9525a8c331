"""Named host configurations: three built in (`embedded`, `embedded-small`, `embedded-tiny`), the rest in the
store.

The clients and the embedded server are imported only where one is made (`serving`, `make_host`): the
requests that name a host (`EnumerationPlan`, `JudgeRequest`) check it without loading them, and the
`forge` command line, which reads its defaults from those requests, starts without them."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from forge_core.config import builtin_or_stored
from forge_core.errors import InvalidInput
from forge_core.hosts.base import Host, HostConfig, HostError
from forge_core.hosts.depth_maps import CUSTOM, canonical_json, parse_depth_map
from forge_core.records import HostPrices
from forge_core.store import Store

DEFAULT_HOST = "embedded"

BUILTIN_HOSTS: dict[str, HostConfig] = {
    config.name: config
    for config in (
        HostConfig(name="embedded", kind="embedded", model="qwen2.5-coder-1.5b", max_concurrency=2, timeout_s=600.0),
        HostConfig(name="embedded-small", kind="embedded", model="qwen2.5-coder-0.5b", max_concurrency=2,
                   timeout_s=600.0),
        HostConfig(name="embedded-tiny", kind="embedded", model="smollm2-135m", max_concurrency=2, timeout_s=300.0),
    )
}


def new_host_config(name: str, kind: str, model: str, **fields: Any) -> HostConfig:
    """A host configuration to add, with its kind's defaults for the `fields` left out or None: an
    embedded host (a CPU model FORGE serves itself) takes the built-in one's timeout, since a CPU
    answer can take minutes, and its concurrency; a remote one, `HostConfig`'s."""
    fields = {key: value for key, value in fields.items() if value is not None}
    if kind == "embedded":
        builtin = BUILTIN_HOSTS[DEFAULT_HOST]
        fields = {"timeout_s": builtin.timeout_s, "max_concurrency": builtin.max_concurrency, **fields}
    return HostConfig(name=name, kind=kind, model=model, **fields)


def get_host_config(store: Store, name: str) -> HostConfig:
    """A built-in or stored host configuration by name, with a clear error when unknown."""
    return builtin_or_stored("host", name, BUILTIN_HOSTS, store.host_config, store.host_names, host_config_from_dict)


def host_config_from_dict(stored: dict) -> HostConfig:
    """A host configuration from its stored JSON (configurations stored before replicas existed,
    with a single `base_url`, load unchanged)."""
    return HostConfig(**{**stored, "replica_urls": tuple(stored.get("replica_urls", ()))})


def with_base_urls(config: HostConfig, base_urls: Sequence[str]) -> HostConfig:
    """The configuration served at these base URLs (blank entries dropped): the first becomes
    `base_url`, the rest its replicas."""
    urls = [url.strip() for url in base_urls if url.strip()]
    return dataclasses.replace(config, base_url=urls[0] if urls else "", replica_urls=tuple(urls[1:]))


def depth_map_text(config: HostConfig) -> str:
    """The configuration's depth map as indented JSON, for showing and editing."""
    return json.dumps(config.depth_map.as_json(), indent=2)


def with_depth_map(config: HostConfig, thinking: str, edited_text: str) -> HostConfig:
    """The configuration with the preset `thinking`, unless `edited_text` (the depth map as shown by
    `depth_map_text`, perhaps edited) differs from the map of the configuration shown: then that
    map, as a custom one (a custom map equal to a preset's is still custom, and hashed as such)."""
    if edited_text.strip() == depth_map_text(config).strip():
        return dataclasses.replace(config, thinking=thinking, custom_depth_map="" if thinking != CUSTOM
                                   else config.custom_depth_map)
    return dataclasses.replace(config, thinking=CUSTOM, custom_depth_map=canonical_json(parse_depth_map(edited_text)))


def list_host_configs(store: Store) -> list[HostConfig]:
    """Built-in hosts first, then the stored ones by name."""
    stored = [host_config_from_dict(store.host_config(name)) for name in store.host_names()]
    return [*BUILTIN_HOSTS.values(), *stored]


def save_host_config(store: Store, config: HostConfig) -> None:
    """Add or replace a stored host configuration (built-in names are reserved)."""
    if config.name in BUILTIN_HOSTS:
        raise InvalidInput(f"'{config.name}' is a built-in host; choose another name")
    if config.kind not in ("openai", "anthropic", "embedded"):
        raise InvalidInput(f"host kind must be 'openai', 'anthropic' or 'embedded', not '{config.kind}'")
    if config.kind == "embedded":
        _check_embedded(config)
    if config.kind == "openai" and not config.base_url:
        raise InvalidInput(f"host '{config.name}' needs a base URL starting with http:// or https://")
    for url in config.base_urls:
        if not url.startswith(("http://", "https://")):
            raise InvalidInput(f"host '{config.name}': base URL '{url}' must start with http:// or https://")
    if len(set(config.base_urls)) < len(config.base_urls):
        raise InvalidInput(f"host '{config.name}' lists a base URL twice")
    if config.max_concurrency < 1:
        raise InvalidInput(f"host '{config.name}' needs a concurrency of at least 1")
    config.depth_map  # noqa: B018 -- resolving it refuses an unknown control or a bad custom map
    if config.budget_forcing and not (config.kind == "openai" and config.supports_thinking):
        raise InvalidInput(f"host '{config.name}': budget forcing needs an openai-kind host with thinking depths")
    store.save_host_config(config.name, dataclasses.asdict(config))


def _check_embedded(config: HostConfig) -> None:
    """A stored embedded host runs a model `forge host pull` knows, served by FORGE itself (e.g.
    the built-in model under another name, whose outcomes are kept apart)."""
    from forge_core.hosts.models import MODELS

    if config.model not in MODELS:
        raise InvalidInput(f"host '{config.name}': an embedded host runs one of {', '.join(MODELS)}, "
                           f"not '{config.model}'")
    if config.base_urls:
        raise InvalidInput(f"host '{config.name}': an embedded host is served by FORGE itself; leave out --base-url")


@dataclass(frozen=True)
class HostEdit:
    """A change to a stored host, as `forge host edit` and the Hosts page's Save both ask it: its
    endpoints, key variable, concurrency and budget forcing (None: unchanged). Its kind, model and
    thinking control, what its stored outcomes depend on, stay: another model is another host."""

    name: str
    base_urls: tuple[str, ...] | None = None  # replaces the base URLs: the first, then its replicas
    api_key_env: str | None = None  # the name of the environment variable with the key
    max_concurrency: int | None = None  # requests in flight at once, per base URL
    budget_forcing: bool | None = None

    def changes(self) -> dict[str, Any]:
        """The fields it changes, base URLs aside."""
        fields = {"api_key_env": self.api_key_env, "max_concurrency": self.max_concurrency,
                  "budget_forcing": self.budget_forcing}
        return {key: value for key, value in fields.items() if value is not None}

    def check(self, store: Store) -> HostConfig:
        """Refuse, in one line, an unknown host or a change to a built-in one; the host as stored."""
        current = get_host_config(store, self.name)
        if self.name in BUILTIN_HOSTS and (self.changes() or self.base_urls is not None):
            raise InvalidInput(f"'{self.name}' is a built-in host: only its prices can be set "
                               "(--price-in, --price-out)")
        return current


def edit_host(store: Store, edit: HostEdit) -> HostConfig:
    """Apply `edit` to its stored host and save it (checked as `save_host_config` checks a new one)."""
    edited = dataclasses.replace(edit.check(store), **edit.changes())
    if edit.base_urls is not None:
        edited = with_base_urls(edited, edit.base_urls)
    save_host_config(store, edited)
    return edited


def remove_host(store: Store, name: str) -> None:
    """Remove a stored host configuration and its prices (built-in hosts cannot be removed)."""
    if not store.delete_host_config(name):
        raise InvalidInput(f"no stored host named '{name}'")
    store.delete_host_prices(name)


def check_host_prices(prices: HostPrices) -> None:
    """Refuse a negative (or NaN) price."""
    for side, value in (("in", prices.usd_per_million_in), ("out", prices.usd_per_million_out)):
        if not value >= 0:
            raise InvalidInput(f"--price-{side} must be a number of US dollars per million tokens (0 or more), "
                               f"not {value}")


def save_host_prices(store: Store, prices: HostPrices) -> None:
    """Set the prices of a known host (built-in or stored), in US dollars per million tokens."""
    get_host_config(store, prices.host)
    check_host_prices(prices)
    store.save_host_prices(prices)


def updated_prices(store: Store, host: str, price_in: float | None, price_out: float | None) -> HostPrices | None:
    """A host's prices with the given sides changed (None: unchanged), checked; None when no price
    was given. A host priced on one side only costs nothing on the other until that side is set."""
    if price_in is None and price_out is None:
        return None
    current = store.host_prices(host)
    prices = HostPrices(host,
                        price_in if price_in is not None else (current.usd_per_million_in if current else 0.0),
                        price_out if price_out is not None else (current.usd_per_million_out if current else 0.0))
    check_host_prices(prices)
    return prices


@contextlib.contextmanager
def serving(config: HostConfig) -> Iterator[HostConfig]:
    """The configuration with a live base URL: embedded hosts reuse a running server or start one
    for the duration of the block; remote hosts and configurations served before (those with a
    base URL) pass through unchanged."""
    if config.kind != "embedded" or config.base_url:
        yield config
        return
    from forge_core.hosts.embedded import EmbeddedServer, running_server

    running = running_server(config.model)
    if running is not None:
        yield dataclasses.replace(config, base_url=running.base_url)
        return
    with EmbeddedServer(config.model) as server:
        yield dataclasses.replace(config, base_url=server.info.base_url)


def make_host(config: HostConfig) -> Host:
    """The client for a served configuration; create it inside the event loop that uses it."""
    from forge_core.hosts.anthropic import AnthropicHost
    from forge_core.hosts.openai_compat import OpenAICompatibleHost

    if config.kind in ("openai", "embedded"):
        if not config.base_url:
            raise HostError(f"host '{config.name}' has no base URL (embedded hosts need `serving`)")
        return OpenAICompatibleHost(config)
    if config.kind == "anthropic":
        return AnthropicHost(config)
    raise HostError(f"unknown host kind '{config.kind}'")


def config_hash(config: HostConfig) -> str:
    """A short hash of what determines a host's answers (not its URLs, replicas or concurrency):
    kind, model and thinking control, plus the map itself for a custom depth map (a preset's
    name stands for its fields, so configurations stored before depth maps keep their hash) and
    budget forcing when it is on."""
    key = {"kind": config.kind, "model": config.model, "thinking": config.thinking}
    if config.custom_depth_map:
        key["depth_map"] = config.custom_depth_map
    if config.budget_forcing:
        key["budget_forcing"] = True
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
