"""An OpenAI-compatible HTTP server (Starlette on uvicorn) over `route_and_answer`.

`POST /v1/chat/completions` routes the last user message (model `forge`, `forge-lite`,
`forge-full`) or answers it under a fixed arm (model `forge-arm-<arm>`, for comparison) through
`forge_core.routing.live.route_and_answer`, the same function the dashboard and `forge ask
--route` call, inside the client's conversation: its system messages join FORGE's, its earlier
turns come before the arm's user message, and its `max_tokens`, `temperature`, `top_p`, `seed`
and `stop` apply within the arm's cap; what FORGE cannot honour is refused with a 400 naming the
field (`forge_core.server.chat_request`). Only the calls the decision needs are made: one for a
Lite or BGE+BM25 router or a fixed arm, the four probes plus the answer for a Full router (no
fifth call when the greedy probe is the answer); never an Always-Raw call for the response. The
answer is a standard `chat.completion` whose `usage` counts those calls, plus a `forge` object
(arm, probabilities, evidence titles, host calls, tokens, latency, routing time). With
`stream: true` it comes as server-sent events in OpenAI's chunk format once the host has
answered, the `forge` object in the last chunk. `--shadow-raw RATE` measures Always-Raw's cost
on that share of the requests after their responses (`forge_core.server.shadow`), for the saving
estimate at GET /metrics (`forge_core.server.metrics`). Errors use OpenAI's error JSON. The
router, retriever, embedder and host client are loaded once, in the background (503 until then),
and shared by every request in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from forge_core.arms import Arm, alphabet
from forge_core.errors import ForgeError, InvalidInput, MissingStep
from forge_core.evidence.retrieval import Retriever
from forge_core.evidence.retrievers import get_retriever_config
from forge_core.hosts.base import Host, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import get_host_config
from forge_core.routing.ask import check_router_retriever
from forge_core.routing.checkpoints import LoadedCheckpoint, latest_checkpoint, load_checkpoint
from forge_core.routing.features import load_embedder
from forge_core.routing.live import RoutedAnswer, route_and_answer
from forge_core.routing.retriever_backends import open_retriever
from forge_core.server.chat_request import DEFAULT_MODEL, ChatRequest, RefusedField, parse_chat_request
from forge_core.server.metrics import ServerMetrics
from forge_core.server.shadow import ShadowSampler, shadow_raw
from forge_core.store import Store

log = logging.getLogger(__name__)
ROUTER_MODEL = DEFAULT_MODEL  # the router given to `forge serve --router`
ARM_MODEL_PREFIX = "forge-arm-"
VARIANT_MODELS = {"forge-lite": "lite", "forge-full": "full"}  # the host's newest checkpoint of each


@dataclass(frozen=True)
class ServeSettings:
    """What `forge serve` routes with and where it answers."""

    host: str = "embedded"  # a host name (see `forge host list`)
    benchmark: str = "hotpotqa"  # whose corpus evidence is retrieved from
    router: str = "lite"  # a checkpoint id, or lite/full: the host's newest checkpoint of that variant
    api_key_env: str | None = None  # the environment variable holding the key clients must send
    shadow_raw: float = 0.0  # share of requests whose Always-Raw cost is measured after the response
    retriever: str = "bm25"  # where the evidence comes from (see `forge retriever list`)


def resolve_models(store: Store, settings: ServeSettings) -> dict[str, str | Arm]:
    """Model name -> checkpoint id (routed) or arm (fixed); refuses an unknown router or host."""
    config = get_host_config(store, settings.host)
    if settings.router in ("lite", "full"):
        router = latest_checkpoint(store, settings.host, settings.router)
        if router is None:
            raise MissingStep(f"no {settings.router} router for host '{settings.host}': train one with "
                             f"`forge train --stage 1 --host {settings.host} --variant {settings.router}`")
    elif store.checkpoint(settings.router) is None:
        raise InvalidInput(f"no checkpoint '{settings.router}' (see `forge checkpoints`)")
    else:
        router = settings.router
    models: dict[str, str | Arm] = {ROUTER_MODEL: router}
    for model, variant in VARIANT_MODELS.items():
        newest = latest_checkpoint(store, settings.host, variant)
        if newest is not None:
            models[model] = newest
    models |= {f"{ARM_MODEL_PREFIX}{arm.name}": arm for arm in alphabet(config.alphabet_size)}
    return models


def api_key(settings: ServeSettings) -> str | None:
    """The key clients must send, read from the environment only (never logged)."""
    if settings.api_key_env is None:
        return None
    key = os.environ.get(settings.api_key_env, "")
    if not key:
        raise InvalidInput(f"environment variable {settings.api_key_env} is not set (--api-key-env)")
    return key


class ServerState:
    """The resources every request shares, loaded once in the background."""

    def __init__(self, store: Store, settings: ServeSettings) -> None:
        self.store = store
        self.settings = settings
        self.key = api_key(settings)
        self.models = resolve_models(store, settings)
        self.retriever_config = get_retriever_config(store, settings.retriever)
        for checkpoint_id in {m for m in self.models.values() if isinstance(m, str)}:  # a router refuses other evidence
            check_router_retriever(checkpoint_id, store.checkpoint(checkpoint_id)[0]["lineage"], self.retriever_config)
        self.metrics = ServerMetrics()
        self.shadow = ShadowSampler(settings.shadow_raw)
        self.checkpoints: dict[str, LoadedCheckpoint] = {}
        self.retriever: Retriever | None = None
        self.client: Host | None = None
        self.failure: str | None = None
        self._host_lifetime = contextlib.AsyncExitStack()

    @property
    def ready(self) -> bool:
        """True once the host, retriever, embedder and routers are loaded."""
        return self.client is not None

    async def load(self) -> None:
        """Start or reach the host, then load the retriever, embedder and routers (in a worker thread)."""
        try:
            config = get_host_config(self.store, self.settings.host)
            client = await self._host_lifetime.enter_async_context(hosted(config))
            await asyncio.to_thread(self._load_blocking)
            self.client = client
            log.info("serving %s on host %s", ", ".join(self.models), self.settings.host)
        except (ForgeError, OSError) as error:
            self.failure = str(error)
            log.error("could not load: %s", error)

    def _load_blocking(self) -> None:
        self.retriever = open_retriever(self.store, self.retriever_config, self.settings.benchmark)
        load_embedder().embed(["warm-up"])
        for checkpoint_id in {m for m in self.models.values() if isinstance(m, str)}:
            self.checkpoints[checkpoint_id] = load_checkpoint(self.store, checkpoint_id)

    async def close(self) -> None:
        """Close the host client and stop an embedded server this process started."""
        await self._host_lifetime.aclose()


def build_app(store: Store, settings: ServeSettings) -> Starlette:
    """The ASGI application; resources load in the background once it starts."""
    state = ServerState(store, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        loading = asyncio.create_task(state.load())
        try:
            yield
        finally:
            await loading
            await state.close()

    async def models(request: Request) -> Response:
        refused = _refusal(state, request)
        if refused:
            return refused
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "forge"} for name in state.models]})

    async def chat_completions(request: Request) -> Response:
        started = time.perf_counter()
        refused = _refusal(state, request)
        if refused:
            return refused
        try:
            asked = await _read_chat_request(request)
        except RefusedField as error:
            return _error(state, 400, str(error), "invalid_request_error", error.param)
        if asked.model not in state.models:
            return _error(state, 404, f"unknown model '{asked.model}' (GET /v1/models lists them)",
                          "not_found_error", "model")
        try:
            result = await _answer(state, asked)
        except HostError as error:
            return _error(state, 502, f"the host failed: {error}", "api_error")
        except ForgeError as error:
            return _error(state, 400, str(error), "invalid_request_error")
        state.metrics.record_answer(result.arm, result.host_calls, result.tokens, time.perf_counter() - started)
        shadow = None
        if state.shadow.take():  # runs once the response has been sent
            shadow = BackgroundTask(shadow_raw, state.client, state.metrics, asked.model, result, asked.chat)
        if asked.stream:
            return StreamingResponse(_chunks(asked.model, result), media_type="text/event-stream", background=shadow)
        return JSONResponse(_completion(asked.model, result), background=shadow)

    async def metrics(_: Request) -> Response:
        return PlainTextResponse(state.metrics.render(), media_type="text/plain; version=0.0.4")

    async def health(_: Request) -> Response:
        if state.ready:
            return JSONResponse({"status": "ok", "host": settings.host, "models": list(state.models)})
        status = "failed" if state.failure else "loading"
        return JSONResponse({"status": status, "error": state.failure}, status_code=503)

    return Starlette(routes=[
        Route("/v1/models", models), Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/metrics", metrics), Route("/health", health),
    ], lifespan=lifespan)


@contextlib.contextmanager
def serving_in_thread(store: Store, settings: ServeSettings, port: int = 0, timeout_s: float = 300.0) -> Iterator[str]:
    """The server on 127.0.0.1 in a background thread until the block ends (for tests, benchmarks
    and embedding in a Python process); yields its URL once loading has ended (ready or failed:
    see GET /health). `port` 0 takes a free port."""
    if port == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(store, settings), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while _health_status(url) in (None, "loading"):
            if time.monotonic() > deadline or not thread.is_alive():
                raise HostError(f"the server on {url} did not finish loading within {timeout_s:.0f} s")
            time.sleep(0.2)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def _health_status(url: str) -> str | None:
    try:
        return httpx.get(f"{url}/health", timeout=5).json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def _refusal(state: ServerState, request: Request) -> Response | None:
    """401 without the right key (when one is set), 503 until the resources are loaded."""
    if state.key is not None:
        sent = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(sent.encode(), state.key.encode()):
            return _error(state, 401, "missing or wrong API key", "authentication_error")
    if not state.ready:
        why = f"the server could not load: {state.failure}" if state.failure else "the server is still loading"
        return _error(state, 503, why, "service_unavailable")
    return None


async def _read_chat_request(request: Request) -> ChatRequest:
    """The request's body as a `ChatRequest`; `RefusedField` when it is not JSON or not honourable."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise RefusedField("the body is not JSON", None) from None
    return parse_chat_request(body)


async def _answer(state: ServerState, asked: ChatRequest) -> RoutedAnswer:
    """Route (or take the fixed arm) and answer inside the client's conversation: no Always-Raw call."""
    target = state.models[asked.model]
    return await route_and_answer(
        state.store, state.client, state.retriever, asked.question, state.settings.benchmark,
        checkpoint=state.checkpoints[target] if isinstance(target, str) else None,
        arm=target if isinstance(target, Arm) else None, chat=asked.chat)


def _error(state: ServerState, status: int, message: str, kind: str, param: str | None = None) -> JSONResponse:
    state.metrics.record_error(status)
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": None}},
                        status_code=status)


def _usage(result: RoutedAnswer) -> dict[str, int]:
    tokens_in, tokens_out = result.host_tokens
    return {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def _completion(model: str, result: RoutedAnswer) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": result.answer.answer}}],
            "usage": _usage(result), "forge": result.to_json()}


async def _chunks(model: str, result: RoutedAnswer) -> AsyncIterator[str]:
    """The answer as OpenAI chunks: the role, the content, then the finish with usage and `forge`."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}
    deltas = [{"role": "assistant", "content": ""}, {"content": result.answer.answer}]
    for delta in deltas:
        yield _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": _usage(result),
                  "forge": result.to_json()})
    yield "data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"
