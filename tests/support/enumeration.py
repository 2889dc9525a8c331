"""Enumeration helpers for the tests: a test host's configuration, and one enumeration run against it."""

from __future__ import annotations

import asyncio

from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.runner import enumerate_arms
from forge_core.hosts.base import HostConfig
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.store import Store


def host_config(url: str, retries: int = 2) -> HostConfig:
    return HostConfig(name="test-host", kind="openai", model="m", base_url=url, max_retries=retries,
                      timeout_s=5.0, max_concurrency=4)


def run(store: Store, plan: EnumerationPlan, config: HostConfig):
    async def go():
        async with OpenAICompatibleHost(config, retry_base_delay_s=0.001) as client:
            return await enumerate_arms(store, plan, client)
    return asyncio.run(go())
