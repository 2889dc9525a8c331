"""Resources a test needs (benchmark files, the tiny model, chromium, the demo export, a module of
the test extra): skip when one is missing, or fail under FORGE_REQUIRE_ALL=1 (as `.ci/run` sets)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

from forge_core import config
from forge_core.hosts.models import is_pulled
from forge_core.hosts.registry import BUILTIN_HOSTS


def require_or_skip(reason: str) -> NoReturn:
    """Skip a test whose resource (benchmark files, tiny model, chromium, demo export, test extra)
    is missing; under FORGE_REQUIRE_ALL=1 (as `.ci/run` sets) fail it instead, so CI cannot pass
    by skipping."""
    if os.environ.get("FORGE_REQUIRE_ALL") == "1":
        pytest.fail(f"{reason} (FORGE_REQUIRE_ALL=1: a missing resource fails the run)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, reason: str) -> ModuleType:
    """The imported module, or `require_or_skip(reason)` when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require_or_skip(reason)


def require_tiny_model() -> None:
    """The tiny SmolLM2 model must be pulled (see `require_or_skip`)."""
    if not is_pulled(BUILTIN_HOSTS["embedded-tiny"].model, config.models_dir()):
        require_or_skip("tiny model not pulled: run `forge host pull smollm2-135m` (scripts/setup.sh does)")


def require_demo_export() -> None:
    """The committed demo export must be there (see `require_or_skip`)."""
    if not (config.demo_dir() / "arm_outcomes.parquet").exists():
        require_or_skip(f"no committed demo export in {config.demo_dir()}")
