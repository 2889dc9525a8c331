"""A test double: record a host's answers to a JSONL file and replay them later without the model.

One line per call: `{"key", "host", "model", "request", "generation"}`, where `key` is
`request_key(request)`. A recording file belongs to one host: the key covers the request only.
When a request was recorded several times (sampling at temperature > 0), replay answers with the
recordings in their recorded order and then starts over, so repeated samples stay distinct.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from forge_core.hosts.base import Generation, GenerationRequest, Host, HostConfig, HostError

logger = logging.getLogger(__name__)


def _request_fields(request: GenerationRequest) -> dict[str, Any]:
    """The request as plain JSON values, floats normalized so 0 and 0.0 hash alike; `stop` and
    `top_logprobs` only when set, so requests without them keep the keys they were recorded under."""
    fields = asdict(request)
    if request.top_logprobs is None:  # only when set, as `stop`
        del fields["top_logprobs"]
    if request.stop is None:
        del fields["stop"]
    else:
        fields["stop"] = list(request.stop)
    fields["messages"] = [dict(message) for message in request.messages]
    fields["temperature"] = float(request.temperature)
    fields["top_p"] = float(request.top_p)
    return fields


def request_key(request: GenerationRequest) -> str:
    """Stable hash of a request: equal requests give the same key across runs and machines."""
    canonical = json.dumps(
        _request_fields(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _append_line(path: Path, line: str) -> None:
    """Append one line with a single O_APPEND write, so concurrent writers never interleave."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)


class RecordingHost(Host):
    """Forwards every request to `inner` and appends (request, generation) to a JSONL file.

    Failed calls are not recorded: the `HostError` reaches the caller unchanged.
    """

    def __init__(self, inner: Host, path: str | Path) -> None:
        self.inner = inner
        self.config = inner.config
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"RecordingHost(inner={self.inner!r}, path={str(self.path)!r})"

    async def generate(self, request: GenerationRequest) -> Generation:
        """Answer through the inner host and record the call."""
        generation = await self.inner.generate(request)
        record = {
            "key": request_key(request),
            "host": self.config.name,
            "model": self.config.model,
            "request": _request_fields(request),
            "generation": asdict(generation),
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        await asyncio.to_thread(_append_line, self.path, line)
        return generation

    async def aclose(self) -> None:
        """Close the inner host."""
        await self.inner.aclose()


def _load_recordings(path: Path) -> dict[str, list[Generation]]:
    """Generations by request key in recorded order; unreadable lines are logged and skipped."""
    recordings: dict[str, list[Generation]] = defaultdict(list)
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
                fields = record["generation"]
                top = tuple(tuple(token) for token in fields.pop("top_logprobs", ()))  # JSON lists, as recorded tuples
                recordings[record["key"]].append(Generation(**fields, top_logprobs=top))
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("%s line %d: skipped unreadable recording (%s)", path, number, exc)
    return dict(recordings)


class ReplayHost(Host):
    """Answers from a `RecordingHost` file by request key; never calls a model."""

    def __init__(self, path: str | Path, config: HostConfig) -> None:
        self.config = config
        self.path = Path(path)
        if not self.path.is_file():
            raise HostError(f"host {config.name!r}: no recording file at {self.path}")
        self._recordings = _load_recordings(self.path)
        self._calls_by_key: dict[str, int] = defaultdict(int)

    def __repr__(self) -> str:
        return f"ReplayHost(name={self.config.name!r}, path={str(self.path)!r})"

    async def generate(self, request: GenerationRequest) -> Generation:
        """The recorded generation for this request; `HostError` when there is none."""
        key = request_key(request)
        recorded = self._recordings.get(key)
        if not recorded:
            raise HostError(f"no recording for request {key[:16]} in {self.path}")
        call_number = self._calls_by_key[key]
        self._calls_by_key[key] = call_number + 1
        return recorded[call_number % len(recorded)]

    async def aclose(self) -> None:
        """Nothing to release."""
