"""Stage 0 through batch files: the missing calls out as batch request lines, results back in.

Out (`write_request_files`): one line per missing call, in the OpenAI Batch API's input format,
which `vllm run-batch`, LiteLLM's `/v1/batches` and Ray Data's LLM batch inference read too:
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`, the body exactly what the
online client posts (`forge_core.hosts.openai_compat.chat_completion_body`, thinking fields
included). Files are split under a provider's limits (`FileLimits`) and written atomically.

In (`ingest_results`): OpenAI and vLLM output lines (`{"custom_id", "response": {"status_code",
"body"}, "error"}`, or older vLLM's `"response"` holding the completion itself) and Anthropic
Message Batches result lines (`{"custom_id", "result": {"type", "message" | "error"}}`). Each
answered line is scored like an online answer (the same extraction and F1,
`forge_core.evidence.answering`) and stored; a failed line becomes an error row, as a
failed online call does. Batch results carry no latency: their outcomes are stored with
`latency_ms` NULL, which marks them as batch outcomes. Ingesting is idempotent: a call whose
answer is stored already is skipped. With the request lines (`--requests`), a line whose body
differs from what the plan would send now is refused, by its `custom_id`.

Anthropic custom ids are limited to 64 characters of `[A-Za-z0-9_-]`, so Anthropic batches use
`anthropic_custom_id` (a hash of FORGE's id) and are read back with the request lines that hold
FORGE's own ids.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge_core.enumeration.calls import CallKey, PlannedCall, call_request, parse_custom_id
from forge_core.enumeration.outcome_rows import (
    answered_arm_row,
    answered_probe_row,
    failed_arm_row,
    failed_probe_row,
    greedy_probe_row,
)
from forge_core.enumeration.planning import check_same_configuration
from forge_core.errors import InvalidInput
from forge_core.evidence.answering import arm_answer, load_retriever, retrieve_evidence
from forge_core.hosts.anthropic import messages_body, parse_message
from forge_core.hosts.base import Generation, HostConfig, HostError
from forge_core.hosts.http_retry import MalformedResponse, UnusableResponse
from forge_core.hosts.openai_compat import chat_completion_body, parse_chat_completion
from forge_core.hosts.registry import config_hash, get_host_config
from forge_core.records import GREEDY_PROBE, ArmOutcome, Example, ProbeOutcome
from forge_core.store import Store, utc_now

CHAT_COMPLETIONS_URL = "/v1/chat/completions"
WRITE_CHUNK = 512  # outcomes stored per transaction while ingesting


@dataclass(frozen=True)
class FileLimits:
    """The most requests and bytes one batch may hold at a provider."""

    requests: int
    bytes: int


# OpenAI Batch API: 50,000 requests and 200 MB per input file; Anthropic Message Batches:
# 100,000 requests or 256 MB per batch, whichever comes first.
OPENAI_LIMITS = FileLimits(requests=50_000, bytes=200 * 1024 * 1024)
ANTHROPIC_LIMITS = FileLimits(requests=100_000, bytes=256 * 1024 * 1024)


def request_body(config: HostConfig, call: PlannedCall) -> dict[str, Any]:
    """The body the online client would post for this call on this host."""
    if config.kind == "anthropic":
        return messages_body(config, call.request)
    return chat_completion_body(config, call.request)


def check_batchable(config: HostConfig, n_arms: int) -> None:
    """Refuse a plan a batch cannot run as the online client would: under budget forcing a thinking
    request is two calls, the second built from the first's answer."""
    if config.budget_forcing and config.supports_thinking and n_arms == 12:
        raise InvalidInput(f"host '{config.name}' uses budget forcing (two calls per thinking request, the second "
                           f"built from the first): run its 12-arm plan online")


def openai_batch_line(config: HostConfig, call: PlannedCall) -> dict[str, Any]:
    """One OpenAI batch input line for a call."""
    return {"custom_id": call.key.custom_id, "method": "POST", "url": CHAT_COMPLETIONS_URL,
            "body": request_body(config, call)}


def anthropic_custom_id(custom_id: str) -> str:
    """The id an Anthropic batch request gets for FORGE's `custom_id` (Anthropic allows 64
    characters of letters, digits, `_` and `-`)."""
    return "forge-" + hashlib.sha256(custom_id.encode()).hexdigest()[:40]


def split_under_limits(lines: Iterable[dict[str, Any]], limits: FileLimits) -> list[list[dict[str, Any]]]:
    """The lines in order, in as few parts as the limits allow (at least one part)."""
    parts: list[list[dict[str, Any]]] = [[]]
    size = 0
    for line in lines:
        length = len(_encoded(line))
        if parts[-1] and (len(parts[-1]) >= limits.requests or size + length > limits.bytes):
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += length
    return parts


def _encoded(line: dict[str, Any]) -> bytes:
    return (json.dumps(line, ensure_ascii=False) + "\n").encode()


def write_request_files(path: Path, lines: Iterable[dict[str, Any]], limits: FileLimits = OPENAI_LIMITS) -> list[Path]:
    """Write the lines to `path`, or, past a file's limits, to `path`'s stem `-001`, `-002`, ...
    (each written atomically); returns the files written."""
    parts = split_under_limits(lines, limits)
    if len(parts) == 1:
        return [write_lines_atomically(path, parts[0])]
    return [write_lines_atomically(path.with_name(f"{path.stem}-{index:03d}{path.suffix}"), part)
            for index, part in enumerate(parts, start=1)]


def write_lines_atomically(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write the lines to `path` as one JSONL file, atomically (a temporary file, synced, then
    renamed); returns `path`."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        handle.writelines(_encoded(line) for line in lines)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line; a line that is no JSON object is refused."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError as error:
        raise InvalidInput(f"cannot read {path}: {error.strerror}") from None
    with handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise InvalidInput(f"{path}:{number}: malformed JSON") from None
            if not isinstance(value, dict):
                raise InvalidInput(f"{path}:{number}: not a JSON object")
            yield number, value


# ------------------------------------------------------------------ results in


@dataclass(frozen=True)
class BatchResult:
    """One result line: the call it answers, and its response body or why it failed."""

    custom_id: str
    protocol: str  # "openai" (OpenAI and vLLM lines) or "anthropic"
    payload: Any  # the chat completion or Messages body; None when the line failed
    error: str | None

    def generation(self, config: HostConfig) -> Generation:
        """The body parsed as the online client parses it for this host (its depth map's reasoning
        fields included); raises `UnusableResponse`/`MalformedResponse` on a body it cannot use."""
        if self.protocol == "anthropic":
            return parse_message(self.payload)
        return parse_chat_completion(self.payload, config.depth_map)


def parse_result_line(line: dict[str, Any], anthropic_ids: dict[str, str] | None = None) -> BatchResult:
    """A result line of OpenAI, vLLM or Anthropic; `anthropic_ids` maps Anthropic ids back to FORGE's."""
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str):
        raise InvalidInput("a result line has no custom_id")
    if "result" in line:
        if anthropic_ids is None:
            raise InvalidInput(f"custom_id '{custom_id}': Anthropic result lines are read with --requests FILE "
                               f"(the request lines FORGE wrote)")
        return _anthropic_result(anthropic_ids.get(custom_id, custom_id), line["result"])
    return _openai_result(custom_id, line.get("response"), line.get("error"))


def _openai_result(custom_id: str, response: Any, error: Any) -> BatchResult:
    if error:
        return BatchResult(custom_id, "openai", None, f"batch error: {_error_text(error)}")
    if not isinstance(response, dict):
        return BatchResult(custom_id, "openai", None, "batch error: no response")
    if "status_code" not in response and "choices" in response:  # older vLLM: the completion itself
        return BatchResult(custom_id, "openai", response, None)
    body = response.get("body")
    if response.get("status_code") != 200:
        detail = _error_text(body.get("error")) if isinstance(body, dict) and body.get("error") else ""
        return BatchResult(custom_id, "openai", None, f"HTTP {response.get('status_code')}: {detail}".strip())
    return BatchResult(custom_id, "openai", body, None)


def _anthropic_result(custom_id: str, result: Any) -> BatchResult:
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded":
        return BatchResult(custom_id, "anthropic", result.get("message"), None)
    if kind == "errored":
        return BatchResult(custom_id, "anthropic", None, f"batch error: {_error_text(result.get('error'))}")
    return BatchResult(custom_id, "anthropic", None, f"batch request {kind or 'without a result'}")


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        return ": ".join(str(inner[key]) for key in ("type", "code", "message") if inner.get(key))
    return str(error)


@dataclass
class IngestReport:
    """What an ingestion stored, skipped and refused."""

    stored: int = 0  # answered calls stored
    errors: int = 0  # failed calls stored as error rows
    skipped: int = 0  # calls whose answer was stored already
    refused: list[str] = field(default_factory=list)  # one line per refused result


def ingest_results(store: Store, results: Iterable[BatchResult],
                   requests: dict[str, dict[str, Any]] | None = None) -> IngestReport:
    """Score and store batch results (see the module docstring); `requests` maps custom_id to the
    request line it answers, whose body is checked against what the plan would send now."""
    report = IngestReport()
    context = _IngestContext(store)
    arms: list[ArmOutcome] = []
    probes: list[ProbeOutcome] = []
    for result in results:
        try:
            key = parse_custom_id(result.custom_id)
            outcome = context.outcome(key, result, requests)
        except InvalidInput as error:
            report.refused.append(str(error))
            continue
        if outcome is None:
            report.skipped += 1
            continue
        arms += outcome.arms
        probes += outcome.probes
        if outcome.failed:
            report.errors += 1
        else:
            report.stored += 1
        if len(arms) + len(probes) >= WRITE_CHUNK:
            store.write_outcomes(arms, probes)
            arms, probes = [], []
    store.write_outcomes(arms, probes)
    return report


def ingest_lines(store: Store, result_lines: Iterable[dict[str, Any]],
                 request_lines: Iterable[dict[str, Any]] | None = None) -> IngestReport:
    """Parse, score and store result lines (`ingest_results`); with the request lines they answer,
    each body is checked against them and Anthropic's ids are mapped back to FORGE's."""
    requests = None if request_lines is None else {line.get("custom_id"): line for line in request_lines}
    anthropic_ids = None if requests is None else {anthropic_custom_id(custom_id): custom_id for custom_id in requests}
    return ingest_results(store, (parse_result_line(line, anthropic_ids) for line in result_lines), requests)


class _IngestContext:
    """Host configurations, examples, retrievers and stored keys, loaded once per host and benchmark."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.hosts: dict[str, HostConfig] = {}
        self.hashes: dict[str, str] = {}  # host name -> its configuration hash
        self.examples: dict[str, dict[str, Example]] = {}
        self.finished: dict[tuple[str, str], tuple[dict[str, set[str]], dict[str, set[str]]]] = {}

    def host(self, name: str) -> HostConfig:
        if name not in self.hosts:
            config = get_host_config(self.store, name)
            check_same_configuration(self.store, name, config)
            self.hosts[name] = config
            self.hashes[name] = config_hash(config)
        return self.hosts[name]

    def example(self, key: CallKey) -> Example:
        if key.benchmark not in self.examples:
            self.examples[key.benchmark] = {e.example_id: e for e in self.store.examples(key.benchmark)}
        example = self.examples[key.benchmark].get(key.example_id)
        if example is None:
            raise InvalidInput(f"custom_id '{key.custom_id}': no example '{key.example_id}' in '{key.benchmark}'")
        return example

    def stored(self, key: CallKey) -> tuple[bool, bool]:
        """(the call's own answer is stored, its greedy probe is stored)."""
        if (key.host, key.benchmark) not in self.finished:
            self.finished[key.host, key.benchmark] = (self.store.finished_arms(key.host, key.benchmark),
                                                      self.store.finished_probes(key.host, key.benchmark))
        arms, probes = self.finished[key.host, key.benchmark]
        done = probes if key.is_probe else arms
        return (key.name in done.get(key.example_id, set()),
                GREEDY_PROBE in probes.get(key.example_id, set()))

    def mark(self, key: CallKey) -> None:
        """Remember an answered call as stored (a result given twice in one file is stored once)."""
        arms, probes = self.finished[key.host, key.benchmark]
        (probes if key.is_probe else arms).setdefault(key.example_id, set()).add(key.name)
        if key.greedy_probe:
            probes.setdefault(key.example_id, set()).add(GREEDY_PROBE)

    def outcome(self, key: CallKey, result: BatchResult,
                requests: dict[str, dict[str, Any]] | None) -> _ResultOutcomes | None:
        """The rows of one result, or None when its answer is stored already."""
        config = self.host(key.host)
        example = self.example(key)
        answered, greedy_stored = self.stored(key)
        if answered and (greedy_stored or not key.greedy_probe):
            return None
        evidence = retrieve_evidence(load_retriever(self.store, key.benchmark), example.question)
        call = PlannedCall(key, example, evidence, call_request(key, example, evidence))
        if requests is not None:
            _check_request(config, call, requests.get(key.custom_id))
        generation, error = _generation(result, config)
        if generation is None:
            return _ResultOutcomes(*_error_rows(key, example, error, self.hashes[key.host]), failed=True)
        self.mark(key)
        rows = _answer_rows(call, generation, self.hashes[key.host], store_answer=not answered)
        return _ResultOutcomes(*rows, failed=False)


def _check_request(config: HostConfig, call: PlannedCall, line: dict[str, Any] | None) -> None:
    if line is None:
        raise InvalidInput(f"custom_id '{call.key.custom_id}': not in the request lines")
    sent = line.get("body", line.get("params"))
    if sent != request_body(config, call):
        raise InvalidInput(f"custom_id '{call.key.custom_id}': its request differs from what the plan would send "
                           f"now (prompt, settings or host changed); it is not stored")


@dataclass(frozen=True)
class _ResultOutcomes:
    """The rows one result line stores."""

    arms: list[ArmOutcome]
    probes: list[ProbeOutcome]
    failed: bool  # an error row (the line failed, or its body was unusable)


def _generation(result: BatchResult, config: HostConfig) -> tuple[Generation | None, str]:
    """(the result's generation, "") or (None, why it failed)."""
    if result.error is not None:
        return None, result.error
    try:
        return result.generation(config), ""
    except (MalformedResponse, UnusableResponse, HostError) as error:
        return None, f"unusable response: {error}"


def _error_rows(key: CallKey, example: Example, error: str,
                host_hash: str) -> tuple[list[ArmOutcome], list[ProbeOutcome]]:
    """The error row of a failed call, as the online run stores one (no latency: a batch reports none)."""
    now = utc_now()
    if key.is_probe:
        return [], [failed_probe_row(key.host, example, key.name, error, host_hash, now, latency_ms=None)]
    return [failed_arm_row(key.host, example, key.name, error, host_hash, now, now, latency_ms=None, attempts=1)], []


def _answer_rows(call: PlannedCall, generation: Generation, host_hash: str,
                 store_answer: bool) -> tuple[list[ArmOutcome], list[ProbeOutcome]]:
    """The rows of an answered call, scored as online (latency None: a batch reports none)."""
    key, example, now = call.key, call.example, utc_now()
    if key.is_probe:
        return [], [answered_probe_row(key.host, example, key.name, generation, host_hash, now, latency_ms=None)]
    answer = arm_answer(call.arm, generation, call.evidence.support_text(call.arm.support), example.is_fever)
    arms, probes = [], []
    if store_answer:
        arms.append(answered_arm_row(key.host, example, answer, host_hash, now, now, latency_ms=None, attempts=1))
    if key.greedy_probe:
        probes.append(greedy_probe_row(key.host, example, answer, host_hash, now, latency_ms=None))
    return arms, probes
