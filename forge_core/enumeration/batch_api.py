"""Stage 0 through a provider's Batch API: submitted, polled, downloaded and stored for you.

`run_batches` first finishes every batch of the host and provider that the store knows as not yet
ingested (so a rerun, or a run after a crash between creating a batch and storing its results,
resumes polling instead of paying twice), then submits what the plan still misses: the request
lines (`forge_core.enumeration.batch_files`, bodies from the online client's builders) split under
the provider's limits, each batch's id stored the moment the provider returns it. It polls each
batch until it ends, downloads its results and stores them like `--from-batch` (scored as online,
failed lines as error rows, which the next run plans again). The request lines are kept under
`FORGE_CACHE_DIR/batches/` so results are checked against what was sent (and Anthropic's ids
mapped back to FORGE's).

Providers: OpenAI's Batch API (`POST /files`, `POST /batches`, `GET /batches/{id}`, `GET
/files/{id}/content`, `POST /batches/{id}/cancel`; also LiteLLM's proxy in front of vLLM) and
Anthropic's Message Batches (`POST /messages/batches`, `GET /messages/batches/{id}`, its
`results_url`, `POST /messages/batches/{id}/cancel`). Keys come from the host's environment
variable at each request, never stored or shown. A 429 or 5xx is retried up to `MAX_ATTEMPTS`
times, with the hosts' backoff (`forge_core.hosts.http_retry.RetryPolicy`: exponential with jitter,
lengthened to the server's `Retry-After`, up to `RETRY_MAX_S`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import httpx

from forge_core import config
from forge_core.enumeration.batch_files import (
    ANTHROPIC_LIMITS,
    CHAT_COMPLETIONS_URL,
    OPENAI_LIMITS,
    FileLimits,
    IngestReport,
    anthropic_custom_id,
    check_batchable,
    ingest_lines,
    openai_batch_line,
    read_jsonl,
    request_body,
    split_under_limits,
    write_lines_atomically,
)
from forge_core.enumeration.calls import PlannedCall, planned_calls
from forge_core.enumeration.estimate import estimate_calls, input_counter
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.errors import ForgeError, InvalidInput, MissingStep
from forge_core.hosts.anthropic import DEFAULT_BASE_URL, anthropic_auth_headers
from forge_core.hosts.base import GenerationRequest, HostConfig
from forge_core.hosts.http_retry import RetryPolicy, parse_retry_after, read_api_key
from forge_core.hosts.openai_compat import openai_auth_headers
from forge_core.hosts.registry import get_host_config
from forge_core.records import SubmittedBatch
from forge_core.store import Store, utc_now

log = logging.getLogger(__name__)

PROVIDERS = ("openai", "anthropic")
POLL_SECONDS = 30.0  # between two status requests
MAX_ATTEMPTS = 5  # per request, on 429 and 5xx
RETRY_BASE_S = 1.0  # first backoff without a Retry-After; doubled per attempt
RETRY_MAX_S = 120.0  # longest single wait, Retry-After included
FINAL_STATUSES = ("ingested", "failed")  # a stored batch in another status is resumed


class BatchApiError(ForgeError):
    """A provider's Batch API refused or failed a request, in one line."""


class BatchFailed(BatchApiError):
    """The provider reports the batch itself as failed (e.g. its input refused): nothing to resume."""


@dataclass(frozen=True)
class BatchState:
    """A batch's progress as its provider reports it."""

    status: str
    total: int
    completed: int  # answered
    failed: int  # errored, expired or cancelled
    ended: bool  # no further progress: its results can be downloaded
    batch: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the provider's batch object


class BatchApi(Protocol):
    """What FORGE needs of a provider's Batch API."""

    provider: str
    limits: FileLimits
    host: HostConfig

    def request_line(self, call: PlannedCall) -> dict[str, Any]:
        """The line FORGE keeps for a call (FORGE's custom_id and the body sent)."""
        ...

    def submit(self, lines: list[dict[str, Any]]) -> str:
        """Create a batch of these lines; its id."""
        ...

    def state(self, batch_id: str) -> BatchState:
        """The batch's progress."""
        ...

    def result_lines(self, batch_id: str, state: BatchState) -> list[dict[str, Any]]:
        """Every result line of an ended batch (answers and errors), found from its last `state`."""
        ...

    def cancel(self, batch_id: str) -> BatchState:
        """Ask the provider to stop the batch."""
        ...


class _Http:
    """JSON over HTTP with retries on 429 and 5xx, and one-line errors."""

    def __init__(self, provider: str, base_url: str, headers: dict[str, str], retry_base_s: float) -> None:
        self.provider = provider
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=120.0)
        self.policy = RetryPolicy(MAX_ATTEMPTS - 1, retry_base_s, RETRY_MAX_S)

    def request(self, method: str, path: str, what: str, **arguments: Any) -> httpx.Response:
        """The response of a request that succeeded, retried on 429, 5xx and transport errors;
        a request that fails for good raises a one-line `BatchApiError`."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self.client.request(method, path, **arguments)
            except httpx.HTTPError as error:
                if attempt == MAX_ATTEMPTS:
                    raise BatchApiError(f"{self.provider} batch API, {what}: {type(error).__name__}") from None
                time.sleep(self.policy.wait_s(attempt - 1, None))
                continue
            if response.status_code < 400:
                return response
            if response.status_code != 429 and response.status_code < 500 or attempt == MAX_ATTEMPTS:
                raise BatchApiError(f"{self.provider} batch API, {what}: HTTP {response.status_code} "
                                    f"{_error_message(response)}".rstrip())
            log.info("%s batch API, %s: HTTP %d, retrying", self.provider, what, response.status_code)
            time.sleep(self.policy.wait_s(attempt - 1, parse_retry_after(response.headers.get("retry-after"))))
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, what: str, needs: tuple[str, ...] = (), **arguments: Any) -> dict[str, Any]:
        """The JSON object a request (`request`) answers, holding the fields `needs`; any other
        reply raises a one-line `BatchApiError`."""
        response = self.request(method, path, what, **arguments)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise BatchApiError(f"{self.provider} batch API, {what}: the reply is not a JSON object")
        missing = [name for name in needs if name not in body]
        if missing:
            raise BatchApiError(f"{self.provider} batch API, {what}: the reply has no '{missing[0]}'")
        return body

    def jsonl(self, path: str, what: str) -> list[dict[str, Any]]:
        """The objects of a JSONL download, one a line; a line that is no JSON object raises a
        one-line `BatchApiError` (the batch is then resumed by the next run)."""
        lines = []
        for number, text in enumerate(self.request("GET", path, what).text.splitlines(), start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                line = None
            if not isinstance(line, dict):
                raise BatchApiError(f"{self.provider} batch API, {what}: line {number} is not a JSON object")
            lines.append(line)
        return lines


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    return str(error.get("message", "")) if isinstance(error, dict) else ""


class OpenAIBatches:
    """OpenAI's Batch API (and LiteLLM's `/v1/batches`) at the host's base URL."""

    provider = "openai"
    limits = OPENAI_LIMITS

    def __init__(self, host: HostConfig, retry_base_s: float = RETRY_BASE_S) -> None:
        self.host = host
        self.http = _Http(self.provider, host.base_url, openai_auth_headers(read_api_key(host)), retry_base_s)

    def request_line(self, call: PlannedCall) -> dict[str, Any]:
        return openai_batch_line(self.host, call)

    def submit(self, lines: list[dict[str, Any]]) -> str:
        content = "".join(json.dumps(line) + "\n" for line in lines).encode()
        uploaded = self.http.json("POST", "/files", "upload", ("id",), data={"purpose": "batch"},
                                  files={"file": ("forge-stage0.jsonl", content, "application/jsonl")})
        created = self.http.json("POST", "/batches", "create", ("id",), json={
            "input_file_id": uploaded["id"], "endpoint": CHAT_COMPLETIONS_URL, "completion_window": "24h",
            "metadata": {"created_by": "forge enumerate"}})
        return created["id"]

    def state(self, batch_id: str) -> BatchState:
        batch = self.http.json("GET", f"/batches/{batch_id}", "retrieve", ("status",))
        counts = batch.get("request_counts") or {}
        ended = batch["status"] in ("completed", "failed", "expired", "cancelled")
        return BatchState(batch["status"], counts.get("total", 0), counts.get("completed", 0),
                          counts.get("failed", 0), ended, batch)

    def result_lines(self, batch_id: str, state: BatchState) -> list[dict[str, Any]]:
        batch = state.batch
        if batch["status"] == "failed":
            errors = (batch.get("errors") or {}).get("data") or [{}]
            raise BatchFailed(f"openai batch {batch_id} failed: {errors[0].get('message', 'no reason given')}")
        lines = []
        for file_id in (batch.get("output_file_id"), batch.get("error_file_id")):
            if file_id:
                lines += self.http.jsonl(f"/files/{file_id}/content", "download")
        return lines

    def cancel(self, batch_id: str) -> BatchState:
        self.http.request("POST", f"/batches/{batch_id}/cancel", "cancel")
        return self.state(batch_id)


class AnthropicBatches:
    """Anthropic's Message Batches (custom ids mapped with `anthropic_custom_id`)."""

    provider = "anthropic"
    limits = ANTHROPIC_LIMITS

    def __init__(self, host: HostConfig, retry_base_s: float = RETRY_BASE_S) -> None:
        self.host = host
        headers = anthropic_auth_headers(read_api_key(host))
        self.http = _Http(self.provider, host.base_url or DEFAULT_BASE_URL, headers, retry_base_s)

    def request_line(self, call: PlannedCall) -> dict[str, Any]:
        return {"custom_id": call.key.custom_id, "params": request_body(self.host, call)}

    def submit(self, lines: list[dict[str, Any]]) -> str:
        requests = [{"custom_id": anthropic_custom_id(line["custom_id"]), "params": line["params"]} for line in lines]
        return self.http.json("POST", "/messages/batches", "create", ("id",), json={"requests": requests})["id"]

    def state(self, batch_id: str) -> BatchState:
        return self._state(self.http.json("GET", f"/messages/batches/{batch_id}", "retrieve", ("processing_status",)))

    @staticmethod
    def _state(batch: dict[str, Any]) -> BatchState:
        """The state of a Message Batch object (what retrieve and cancel both answer)."""
        counts = batch.get("request_counts") or {}
        failed = sum(counts.get(name, 0) for name in ("errored", "canceled", "expired"))
        total = failed + counts.get("succeeded", 0) + counts.get("processing", 0)
        return BatchState(batch["processing_status"], total, counts.get("succeeded", 0), failed,
                          batch["processing_status"] == "ended", batch)

    def result_lines(self, batch_id: str, state: BatchState) -> list[dict[str, Any]]:
        url = state.batch.get("results_url")
        if not url:
            raise BatchApiError(f"anthropic batch {batch_id} has no results yet")
        return self.http.jsonl(url, "download")

    def cancel(self, batch_id: str) -> BatchState:
        return self._state(self.http.json("POST", f"/messages/batches/{batch_id}/cancel", "cancel",
                                          ("processing_status",)))


def batch_api(provider: str, host: HostConfig, retry_base_s: float = RETRY_BASE_S) -> BatchApi:
    """The Batch API client of `provider` for this host (which must be of that kind)."""
    if provider not in PROVIDERS:
        raise InvalidInput(f"--batch must be one of {', '.join(PROVIDERS)}, not '{provider}'")
    if host.kind != provider:
        raise InvalidInput(f"--batch {provider} needs a host of kind {provider}; '{host.name}' is {host.kind}"
                           + (" (write a file with --to-batch and run it with `vllm run-batch`)"
                              if host.kind == "embedded" else ""))
    return OpenAIBatches(host, retry_base_s) if provider == "openai" else AnthropicBatches(host, retry_base_s)


# ------------------------------------------------------------------ the flow


@dataclass
class BatchRunReport:
    """What `run_batches` submitted, resumed and stored."""

    submitted: list[str] = field(default_factory=list)  # batch ids created by this run
    resumed: list[str] = field(default_factory=list)  # batch ids found unfinished in the store
    stored: int = 0
    errors: int = 0
    skipped: int = 0
    refused: list[str] = field(default_factory=list)


ProgressCallback = Callable[[SubmittedBatch, BatchState], object]


def run_batches(store: Store, plan: EnumerationPlan, api: BatchApi, poll_seconds: float = POLL_SECONDS,
                on_progress: ProgressCallback | None = None) -> BatchRunReport:
    """Finish the host's unfinished batches, then submit the plan's missing calls (one batch per
    part under the provider's limits, all submitted before any is polled), poll and store them."""
    check_batchable(api.host, plan.n_arms)
    report = BatchRunReport()
    for batch in store.batches(plan.host):
        if batch.provider == api.provider and batch.status not in FINAL_STATUSES:
            report.resumed.append(batch.batch_id)
            _finish(store, api, batch, poll_seconds, on_progress, report)
    calls = list(planned_calls(store, plan))
    if not calls:
        return report
    lines = [api.request_line(call) for call in calls]
    by_id = {call.key.custom_id: call for call in calls}
    count, method = input_counter(store, api.host)
    submitted = [_submit(store, plan, api, part, [by_id[line["custom_id"]] for line in part], count, method)
                 for part in split_under_limits(lines, api.limits)]  # all parts run side by side
    for batch in submitted:
        report.submitted.append(batch.batch_id)
        _finish(store, api, batch, poll_seconds, on_progress, report)
    return report


def requests_path(requests_sha256: str) -> Path:
    """Where the request lines of a submitted batch are kept."""
    return config.cache_dir() / "batches" / f"{requests_sha256}.jsonl"


def _submit(store: Store, plan: EnumerationPlan, api: BatchApi, lines: list[dict[str, Any]],
            calls: list[PlannedCall], count: Callable[[GenerationRequest], int], method: str) -> SubmittedBatch:
    """Keep the lines, create the batch and store its id at once (with its estimate, input tokens
    counted by `count`, the host's `input_counter`)."""
    sha = hashlib.sha256("".join(json.dumps(line, sort_keys=True) for line in lines).encode()).hexdigest()
    path = requests_path(sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lines_atomically(path, lines)
    estimate = estimate_calls(store, api.host, calls, count, method)
    batch_id = api.submit(lines)
    now = utc_now()
    batch = SubmittedBatch(batch_id, api.provider, plan.host, sha, len(lines), "submitted", 0, 0,
                           estimate.batch_usd, now, now, None)
    store.save_batch(batch)
    log.info("%s batch %s: %d requests submitted", api.provider, batch_id, len(lines))
    return batch


def _finish(store: Store, api: BatchApi, batch: SubmittedBatch, poll_seconds: float,
            on_progress: ProgressCallback | None, report: BatchRunReport) -> None:
    """Poll a batch until it ends, then store its results and mark it ingested."""
    while True:
        state = api.state(batch.batch_id)
        batch = replace(batch, status=state.status, completed=state.completed, failed=state.failed,
                        updated_at=utc_now())
        store.save_batch(batch)
        if on_progress is not None:
            on_progress(batch, state)
        if state.ended:
            break
        time.sleep(poll_seconds)
    try:
        lines = api.result_lines(batch.batch_id, state)
    except BatchFailed:  # a download that failed leaves the batch to resume; a failed batch is final
        store.save_batch(replace(batch, status="failed", updated_at=utc_now()))
        raise
    ingested = _ingest(store, batch, lines)
    report.stored += ingested.stored
    report.errors += ingested.errors
    report.skipped += ingested.skipped
    report.refused += ingested.refused
    now = utc_now()
    store.save_batch(replace(batch, status="ingested", updated_at=now, ingested_at=now))


def _ingest(store: Store, batch: SubmittedBatch, lines: Iterable[dict[str, Any]]) -> IngestReport:
    """Store a batch's result lines, checked against the request lines kept when it was submitted."""
    path = requests_path(batch.requests_sha256)
    if not path.is_file():
        raise MissingStep(f"the request lines of batch {batch.batch_id} are gone ({path}); "
                          f"they are needed to check and store its results")
    return ingest_lines(store, lines, (line for _, line in read_jsonl(path)))


def cancel_batch(store: Store, batch_id: str, retry_base_s: float = RETRY_BASE_S) -> SubmittedBatch:
    """Ask the provider to cancel a stored batch; its row with the provider's new status. A rerun of
    `forge enumerate --batch` then stores what the batch finished before it stopped."""
    batch = store.batch(batch_id)
    if batch is None:
        raise InvalidInput(f"no batch '{batch_id}' in the store (see `forge batches`)")
    if batch.status in FINAL_STATUSES:
        raise InvalidInput(f"batch '{batch_id}' is {batch.status}: nothing to cancel")
    state = batch_api(batch.provider, get_host_config(store, batch.host), retry_base_s).cancel(batch_id)
    cancelled = replace(batch, status=state.status, completed=state.completed, failed=state.failed,
                        updated_at=utc_now())
    store.save_batch(cancelled)
    return cancelled
