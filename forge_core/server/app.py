"""An OpenAI-compatible HTTP server (Starlette on uvicorn) over `route_and_answer`.

`POST /v1/chat/completions` routes the last user message (model `forge`, `forge-lite`,
`forge-full`) or answers it under a fixed arm (model `forge-arm-<arm>`, for comparison; the `forge`
model itself under `--arm`, or under an arm drawn from `--mix`'s shares by the question,
`forge_core.policies.arm_mix`) through
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

The `forge` model routes at the weights `forge_core.server.deployment` puts in force for the
request's client: fixed (`--lambda-in`, `--lambda-out`) or moved by a token budget's controller
(`--budget-tokens`, `--budgets`; `forge_core.server.budget`), its tokens counted against that
budget after the answer. `POST /v1/route` returns the decision without calling the host. Every
request is one record of the traffic log (`forge_core.traffic_log`), written before its
response is sent; `--candidate` shadows a share of the requests with another router
(`forge_core.server.shadow`).
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
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from forge_core import telemetry
from forge_core.arms import Arm, alphabet, arm_index, parse_arm
from forge_core.errors import ForgeError, InvalidInput, MissingStep
from forge_core.evaluation.calibration import ray_start_for_budget
from forge_core.evaluation.manifest import manifest_id, manifest_summary
from forge_core.evidence.answering import arm_request, retrieve_evidence
from forge_core.evidence.prompts import ClientChat
from forge_core.evidence.retrieval import Retriever
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import get_retriever_config, retriever_hash, retriever_option, retriever_phrase
from forge_core.hosts.base import Host, HostError
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import get_host_config
from forge_core.policies.arm_mix import ArmMix, draw_record, mix_attributes, mix_option, parse_mix
from forge_core.policies.guard import guard_for_question
from forge_core.records import is_fever_benchmark
from forge_core.reports.checkpoint_guard import checkpoint_guard
from forge_core.routing.ask import check_router_retriever
from forge_core.routing.checkpoints import LoadedCheckpoint, latest_checkpoint, load_checkpoint
from forge_core.routing.features import load_embedder
from forge_core.routing.guard import Guard, check_guard_options
from forge_core.routing.live import OVERRIDE, DryRoute, RoutedAnswer, check_question, dry_route, route_and_answer
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT, CostWeights
from forge_core.server.budget import DEFAULT_BUDGET, ray_bounds
from forge_core.server.chat_request import DEFAULT_MODEL, ChatRequest, RefusedField, parse_chat_request
from forge_core.server.deployment import ServingWeights, WeightsRequest, check_router_weights, client_identity
from forge_core.server.metrics import ServerMetrics
from forge_core.server.routed_request import RoutedRequest, host_body
from forge_core.server.shadow import CandidateShadow, ShadowSampler, shadow_raw, shadow_record
from forge_core.statistics import Interval
from forge_core.store import Store
from forge_core.traffic_log import TrafficLog, default_traffic_dir, now, write_served_manifest

log = logging.getLogger(__name__)
ROUTER_MODEL = DEFAULT_MODEL  # the router given to `forge serve --router`
ARM_MODEL_PREFIX = "forge-arm-"
MIX_ROUTER = "mix"  # what a `--mix` decision names as its router (headers, dry route, traffic log)
VARIANT_MODELS = {"forge-lite": "lite", "forge-full": "full"}  # the host's newest checkpoint of each


@dataclass(frozen=True)
class ServeSettings:
    """What `forge serve` routes with and where it answers."""

    host: str = "embedded"  # a host name (see `forge host list`)
    benchmark: str = "hotpotqa"  # whose corpus evidence is retrieved from (`corpus_name`: "a+b" is a union)
    router: str = "lite"  # a checkpoint id, or lite/full: the host's newest checkpoint of that variant
    api_key_env: str | None = None  # the environment variable holding the key clients must send
    shadow_raw: float = 0.0  # share of requests whose Always-Raw cost is measured after the response
    retriever: str = "bm25"  # where the evidence comes from (see `forge retriever list`)
    weights: WeightsRequest = WeightsRequest()  # the `forge` model's fixed weights or token budgets
    candidate: str | None = None  # a checkpoint id routing `candidate_rate` of the requests in the shadow
    candidate_rate: float = 0.0  # share of requests the candidate also routes (--shadow-rate)
    candidate_max_tokens: int | None = None  # tokens the candidate's shadow answers may spend in all
    evaluator_host: str | None = None  # a host rating the served and candidate answers (the judge of `forge rewards`)
    traffic_dir: Path | None = None  # where the traffic log goes (None: `default_traffic_dir()`)
    traffic_log: bool = True  # False only to measure the server without its log (bench/)
    arm: str | None = None  # the `forge` model answers under this fixed arm instead of routing (`--arm`)
    manifest: dict | None = None  # the deployment manifest served (`--manifest`): shown at /health, named in the log
    mix: str | None = None  # the `forge` model answers under fixed arms drawn by question, ARM=SHARE,... (`--mix`)
    guard: float | None = None  # the `forge` model's router is guarded for this risk (`--guard`; None: not guarded)
    guard_fallback: str = "arm"  # the guard's fallback: the best fixed arm, or the cost-matched mix ("mix")


def check_fixed_arm(settings: ServeSettings, n_arms: int) -> Arm:
    """The `--arm` the `forge` model answers under; refuses, in one line, an arm outside the host's
    alphabet and what only a router can do (weights, budgets, a candidate)."""
    arm = parse_arm(settings.arm)
    arm_index(arm, n_arms)  # refuses an arm outside the host's alphabet
    _refuse_router_options(f"--arm {arm.name} serves one fixed arm", "--arm", settings)
    return arm


def check_mix(settings: ServeSettings, n_arms: int) -> ArmMix:
    """The `--mix` the `forge` model answers under; refuses, in one line, a mix `parse_mix` refuses,
    a mix beside `--arm`, and what only a router can do (weights, budgets, a candidate)."""
    if settings.arm is not None:
        raise InvalidInput(f"--mix serves a mix of fixed arms: --arm {settings.arm} serves one (drop one of them)")
    mix = parse_mix(settings.mix, n_arms)
    _refuse_router_options("--mix serves fixed arms", "--mix", settings)
    return mix


def _refuse_router_options(what: str, flag: str, settings: ServeSettings) -> None:
    """Refuse, in one line, the weights, budgets or candidate beside a fixed arm or a mix."""
    weights = settings.weights
    asked = [flag for flag, given in (("--lambda-in", weights.lambda_in is not None),
                                      ("--lambda-out", weights.lambda_out is not None),
                                      ("--budget-tokens", weights.budget_tokens is not None),
                                      ("--budgets", bool(weights.budgets)), ("--ratio", weights.ratio is not None),
                                      ("--candidate", settings.candidate is not None),
                                      ("--guard", settings.guard is not None)) if given]
    if asked:
        raise InvalidInput(f"{what}: {asked[0]} needs a router (drop {flag})")


def resolve_models(store: Store, settings: ServeSettings) -> dict[str, str | Arm | ArmMix]:
    """Model name -> checkpoint id (routed), arm (fixed) or mix of arms (`--mix`); refuses an
    unknown router or host. The newest Lite and Full routers are those trained under the served
    retriever."""
    config = get_host_config(store, settings.host)
    evidence = retriever_hash(get_retriever_config(store, settings.retriever))
    fixed = {f"{ARM_MODEL_PREFIX}{arm.name}": arm for arm in alphabet(config.alphabet_size)}
    if settings.mix is not None:
        return {ROUTER_MODEL: check_mix(settings, config.alphabet_size)} | fixed
    if settings.arm is not None:
        return {ROUTER_MODEL: check_fixed_arm(settings, config.alphabet_size)} | fixed
    if settings.candidate is not None:
        found = store.checkpoint(settings.candidate)
        if found is None:
            raise InvalidInput(f"no candidate checkpoint '{settings.candidate}' (see `forge checkpoints`)")
        if found[0]["variant"] == "full":
            raise InvalidInput(f"candidate {settings.candidate} is a Full router: its features are four host probes; "
                               "shadow a Lite or BGE+BM25 router")
    if settings.router in ("lite", "full"):
        router = latest_checkpoint(store, settings.host, settings.router, retriever_hash=evidence)
        if router is None:
            under = retriever_phrase(settings.retriever)
            raise MissingStep(f"no {settings.router} router for host '{settings.host}'{under}: train one with "
                             f"`forge train --stage 1 --host {settings.host} --variant {settings.router}"
                             f"{retriever_option(settings.retriever)}`")
    elif store.checkpoint(settings.router) is None:
        raise InvalidInput(f"no checkpoint '{settings.router}' (see `forge checkpoints`)")
    else:
        router = settings.router
    check_router_weights(router, store.checkpoint(router)[0]["lineage"], settings.weights)
    check_guard(settings)
    if settings.evaluator_host is not None:
        get_host_config(store, settings.evaluator_host)  # refuses an unknown host now
    models: dict[str, str | Arm] = {ROUTER_MODEL: router}
    for model, variant in VARIANT_MODELS.items():
        newest = latest_checkpoint(store, settings.host, variant, retriever_hash=evidence)
        if newest is not None:
            models[model] = newest
    return models | fixed


def check_guard(settings: ServeSettings) -> None:
    """Refuse, in one line, the guard's options `check_guard_options` refuses, or a guard beside
    budgets: a guard's threshold is fitted at one pair of weights, and a budget moves them."""
    check_guard_options(settings.guard, settings.guard_fallback)
    if settings.guard is not None and settings.weights.budgeted:
        raise InvalidInput("--guard fits its threshold at one pair of weights, and a token budget moves them: "
                           "drop --guard, or serve fixed weights (--lambda-in/--lambda-out)")


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
        self.host_config = get_host_config(store, settings.host)
        for checkpoint_id in {m for m in self.models.values() if isinstance(m, str)}:  # a router refuses other evidence
            check_router_retriever(checkpoint_id, store.checkpoint(checkpoint_id)[0]["lineage"], self.retriever_config)
        self.metrics = ServerMetrics()
        self.shadow = ShadowSampler(settings.shadow_raw)
        self.candidate = CandidateShadow(settings.candidate, settings.candidate_rate, settings.candidate_max_tokens)
        self.traffic: TrafficLog | None = None  # opened when the server starts (`open_traffic_log`)
        self.weights: ServingWeights | None = None
        self.guard: Guard | None = None  # the `forge` model's guard (`--guard`), fitted when the server loads
        self.checkpoints: dict[str, LoadedCheckpoint] = {}
        self.retriever: Retriever | None = None
        self.client: Host | None = None
        self.evaluator: Host | None = None
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
            if self.settings.evaluator_host is not None:
                judge = get_host_config(self.store, self.settings.evaluator_host)
                self.evaluator = await self._host_lifetime.enter_async_context(hosted(judge))
            await asyncio.to_thread(self._load_blocking)
            self.client = client
            log.info("serving %s on host %s", ", ".join(self.models), self.settings.host)
        except (ForgeError, OSError) as error:
            self.failure = str(error)
            log.error("could not load: %s", error)

    def _load_blocking(self) -> None:
        self.retriever = open_retriever(self.store, self.retriever_config, self.settings.benchmark)
        load_embedder().embed(["warm-up"])
        served = {m for m in self.models.values() if isinstance(m, str)} | set(filter(None, [self.settings.candidate]))
        for checkpoint_id in served:
            self.checkpoints[checkpoint_id] = load_checkpoint(self.store, checkpoint_id)
        served_by = self.models[ROUTER_MODEL]
        if isinstance(served_by, (Arm, ArmMix)):  # `--arm`, `--mix`: no weights to move
            self.weights = ServingWeights(self.settings.weights.fixed_weights(), {})
        else:
            self.weights = serving_weights(self.store, self.settings.weights, self.checkpoints[served_by])
            self.guard = self._fit_guard(served_by)

    def _fit_guard(self, checkpoint_id: str) -> Guard | None:
        """The served router's guard at the weights served (`--guard`), fitted on its own dev queries."""
        if self.settings.guard is None:
            return None
        guard = checkpoint_guard(self.store, checkpoint_id, CostWeights(*self.weights.fixed), self.settings.guard,
                                 self.settings.guard_fallback)
        log.info("guard on %s: %s", checkpoint_id, guard.summary())
        return guard

    def open_traffic_log(self) -> None:
        """Start this process's traffic-log segment (unless the log is off)."""
        if self.settings.traffic_log:
            directory = self.settings.traffic_dir or default_traffic_dir(self.store.path)
            self.traffic = TrafficLog(directory)
            if self.settings.manifest is not None:
                write_served_manifest(directory, self.settings.manifest)

    def log_request(self, record: dict[str, Any]) -> None:
        """Append a request (or shadow) record to the traffic log, if it is on; a request record
        names the retriever whose evidence it was served under (name and configuration hash)."""
        if self.traffic is not None:
            if record.get("kind") == "request":
                record = record | {"retriever": self.retriever_config.name,
                                   "retriever_hash": retriever_hash(self.retriever_config)}
                if self.settings.manifest is not None:
                    record["manifest"] = manifest_id(self.settings.manifest)
            self.traffic.append(record)

    def route_chat(self, asked: ChatRequest, client: str) -> RoutedRequest:
        """Route a chat request to a routed model at the weights in force for `client`, calling no
        host: the decision and the host request it becomes (`forge_core.server.routed_request`).
        `RefusedField` for a model that does not route, `ForgeError` for a question FORGE refuses."""
        target = self.models.get(asked.model)
        if isinstance(target, ArmMix):
            return self._fixed_route(asked, *target.arm_for(asked.question), target)
        if isinstance(target, Arm) and asked.model == ROUTER_MODEL:  # `--arm`: the `forge` model's deployed arm
            return self._fixed_route(asked, target)
        if not isinstance(target, str):
            raise RefusedField(f"`model` must be a routed model ({', '.join(_routed(self))}), not '{asked.model}'",
                               "model")
        budget, weights = _weights_for(self, asked.model, client)
        decision = dry_route(self.retriever, asked.question, self.checkpoints[target], CostWeights(*weights),
                             self.guard_for(asked))
        request = arm_request(decision.evidence, parse_arm(decision.arm), is_fever_benchmark(self.settings.benchmark),
                              asked.chat)
        return RoutedRequest(asked.model, target, decision, budget, weights, host_body(self.host_config, request))

    def guard_for(self, asked: ChatRequest) -> Guard | None:
        """The `forge` model's guard for this request (None for other models or without `--guard`):
        under a mix fallback, its fallback is the arm the mix draws for the question."""
        if self.guard is None or asked.model != ROUTER_MODEL:
            return None
        return guard_for_question(self.guard, asked.question, self.host_config.alphabet_size)

    def _fixed_route(self, asked: ChatRequest, arm: Arm, draw: float | None = None,
                     mix: ArmMix | None = None) -> RoutedRequest:
        """The dry route of the `forge` model under `--arm` (that arm) or `--mix` (the arm the
        question drew, with its draw): the arm with its evidence; no router, no weights."""
        started = time.perf_counter()
        check_question(asked.question)
        evidence = retrieve_evidence(self.retriever, asked.question)
        decision = DryRoute(arm.name, {arm.name: 1.0}, evidence, (time.perf_counter() - started) * 1000.0)
        request = arm_request(evidence, arm, is_fever_benchmark(self.settings.benchmark), asked.chat)
        return RoutedRequest(asked.model, OVERRIDE if mix is None else MIX_ROUTER, decision, None, self.weights.fixed,
                             host_body(self.host_config, request), mix=None if mix is None else mix.option,
                             mix_draw=draw)

    def load_without_host(self) -> None:
        """Load the retriever, embedder and routers and open the traffic log, but neither start nor
        reach the host: for a gateway, which forwards the routed request to the host itself."""
        self._load_blocking()
        self.open_traffic_log()

    def record_forwarded(self, entry: RequestEntry, routed: RoutedRequest, tokens_in: int, tokens_out: int) -> None:
        """A routed request a gateway forwarded, once the host has answered with this usage: counted
        in the metrics and against its budget, and logged, as `forge serve` does an answer."""
        latency_s = entry.elapsed_s()
        self.metrics.record_answer(routed.arm, 1, tokens_in + tokens_out, latency_s, from_mix=routed.mix is not None)
        self.weights.record(routed.budget, tokens_in + tokens_out)
        self.log_request(entry.forwarded(routed, tokens_in, tokens_out, latency_s)
                         | {"budget_target": self.weights.target(routed.budget),
                            "budget_bound": self.weights.at_bound(routed.budget)} | routed.record_fields())

    async def close(self) -> None:
        """Close the host client, stop an embedded server this process started, close the log."""
        await self._host_lifetime.aclose()
        if self.traffic is not None:
            self.traffic.close()


# Over 60 lines: the routes, closures over one app's router, budget and traffic log.
def build_app(store: Store, settings: ServeSettings) -> Starlette:
    """The ASGI application; resources load in the background once it starts."""
    state = ServerState(store, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        state.open_traffic_log()
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
        entry, refused = _admit(state, request, "chat")
        if refused:
            return refused
        try:
            asked = await _read_chat_request(request)
        except RefusedField as error:
            return entry.refused(state, _invalid(state, error, error.param))
        entry.model = asked.model
        if asked.model not in state.models:
            return entry.refused(state, _error(state, 404, f"unknown model '{asked.model}' (GET /v1/models lists them)",
                                               "not_found_error", "model"))
        budget, weights = _weights_for(state, asked.model, entry.client)
        drawn = _mix_draw(state, asked)
        with telemetry.span(telemetry.REQUEST_SPAN, telemetry.request_attributes(asked.model), "SERVER") as span:
            try:
                result = await _answer(state, asked, weights, drawn)
            except HostError as error:
                telemetry.set_attributes(span, {"error.type": "host_error"})
                return entry.refused(state, _error(state, 502, f"the host failed: {error}", "api_error"))
            except ForgeError as error:
                telemetry.set_attributes(span, {"error.type": "invalid_request"})
                return entry.refused(state, _invalid(state, error))
            telemetry.set_attributes(span, result.span_attributes() | budget_attributes(state, budget, weights)
                                     | mix_attributes(drawn))
        latency_s = entry.elapsed_s()
        state.metrics.record_answer(result.arm, result.host_calls, result.tokens, latency_s, from_mix=bool(drawn))
        state.weights.record(budget, result.tokens)
        state.log_request(entry.answered(result, budget, weights, latency_s)
                          | {"budget_target": state.weights.target(budget),
                             "budget_bound": state.weights.at_bound(budget)} | drawn)
        background = _shadow_work(state, asked, result, entry.request_id, weights)
        if asked.stream:
            return StreamingResponse(_chunks(asked.model, result, drawn), media_type="text/event-stream",
                                     background=background, headers=_answer_headers(result, drawn))
        return JSONResponse(_completion(asked.model, result, drawn), background=background,
                            headers=_answer_headers(result, drawn))

    async def route(request: Request) -> Response:
        entry, refused = _admit(state, request, "route")
        if refused:
            return refused
        try:
            asked = await _read_route_request(request)
            entry.model = asked.model
            with telemetry.span("route forge", telemetry.request_attributes(asked.model, "route"), "SERVER") as span:
                routed = state.route_chat(asked, entry.client)
                telemetry.set_attributes(span, routed.span_attributes()
                                         | budget_attributes(state, routed.budget, routed.weights))
        except RefusedField as error:
            return entry.refused(state, _invalid(state, error, error.param))
        except ForgeError as error:
            return entry.refused(state, _invalid(state, error))
        state.log_request(entry.routed(routed.decision, routed.router, routed.budget, routed.weights)
                          | routed.record_fields())
        return JSONResponse(routed.to_json(), headers=routed.headers())

    async def metrics(_: Request) -> Response:
        budgets = state.weights.states() if state.weights is not None else []
        return PlainTextResponse(state.metrics.render(budgets), media_type="text/plain; version=0.0.4")

    async def health(_: Request) -> Response:
        if state.ready:
            served = None if settings.manifest is None else manifest_summary(settings.manifest)
            return JSONResponse({"status": "ok", "host": settings.host, "models": list(state.models),
                                 "manifest": served})
        status = "failed" if state.failure else "loading"
        return JSONResponse({"status": status, "error": state.failure}, status_code=503)

    return Starlette(routes=[
        Route("/v1/models", models), Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/route", route, methods=["POST"]), Route("/metrics", metrics), Route("/health", health),
    ], lifespan=lifespan)


def serving_weights(store: Store, request: WeightsRequest, router: LoadedCheckpoint) -> ServingWeights:
    """The `forge` model's weights: fixed, or budgets starting where calibration's rule puts them on
    the router's own host (or at `--lambda-in` when given)."""
    start: dict[str, tuple[float, float]] = {}
    targets = dict(request.budgets) | ({DEFAULT_BUDGET: request.budget_tokens} if request.budget_tokens else {})
    if request.budgeted and router.conditioning is not None:
        ratio = request.ray_ratio()
        for name, target in targets.items():
            if request.lambda_in is not None:
                start[name] = (request.lambda_in, ratio * request.lambda_in)
                continue
            found = ray_start_for_budget(store, router.checkpoint_id, target, ratio)
            at = found.weights
            if at.lambda_in <= ray_bounds(router.conditioning, ratio)[0] * (1 + 1e-9) and found.tokens < target:
                log.warning("budget %s (%g tokens) may be above router %s's reach: at its lowest trained weights it "
                            "spends %.1f tokens a query on its host's test split; if the traffic here is alike, the "
                            "controller will sit there (`budget_bound` in each record says so)", name,
                            target, router.checkpoint_id, found.tokens)
            log.info("budget %s (%g tokens): starting at lambda_in %.4g, lambda_out %.4g (%.1f tokens on %d test "
                     "queries%s)", name, target, at.lambda_in, at.lambda_out, found.tokens, found.queries,
                     "" if found.met else "; not met on the ray")
            start[name] = (at.lambda_in, at.lambda_out)
            above = found.mix is not None and Interval.of(found.mix["gains"][router.checkpoint_id]["ci"]).above
            log.log(logging.INFO if above else logging.WARNING, "budget %s (%g tokens): %s", name, target,
                    budget_mix_text(found.mix, router.checkpoint_id))
    return ServingWeights.build(request, router, start)


def budget_mix_text(mix: dict | None, router: str) -> str:
    """The best mix of fixed arms within a budget and the router's F1 gain over it, as serve logs it."""
    if mix is None:
        return "no mix of fixed arms spends so few tokens"
    what = " + ".join(f"{arm} {share:.0%}" for arm, share in zip(mix["arms"], mix["shares"]))
    gain = mix["gains"][router]
    return (f"best mix of fixed arms within it {what} ({mix['tokens']:.1f} tokens, macro F1 {mix['f1']:.4f}); router "
            f"{router} at its start {gain['difference']:+.4f} F1 [{gain['ci'][0]:+.4f}, {gain['ci'][1]:+.4f}] "
            f"against it ({gain['verdict']}) on its host's test split; the mix is served by `forge serve --mix "
            f"{mix_option(mix['arms'], mix['shares'])}`")


@dataclass
class RequestEntry:
    """One request's traffic-log record as it is built (`forge_core.traffic_log`)."""

    request_id: str
    endpoint: str
    client: str
    started: float  # perf_counter at arrival
    time: float  # Unix time at arrival
    model: str | None = None

    @classmethod
    def start(cls, request: Request, endpoint: str) -> RequestEntry:
        """A request as it arrives: its id, client (never its key) and times."""
        return cls.from_headers(request.headers, endpoint)

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], endpoint: str) -> RequestEntry:
        """A request arriving with these headers (a gateway's: LiteLLM, Envoy)."""
        return cls(uuid.uuid4().hex, endpoint, client_identity(headers), time.perf_counter(), now())

    def elapsed_s(self) -> float:
        """Seconds since the request arrived."""
        return time.perf_counter() - self.started

    def base(self, status: int) -> dict[str, Any]:
        """The fields every request record has."""
        return {"kind": "request", "id": self.request_id, "time": self.time, "endpoint": self.endpoint,
                "client": self.client, "model": self.model, "status": status,
                "latency_ms": round(self.elapsed_s() * 1000.0, 3)}

    def refused(self, state: ServerState, response: Response) -> Response:
        """Log a refused or failed request, and return its response."""
        record = self.base(response.status_code) | {"host_calls": 0, "tokens_in": 0, "tokens_out": 0, "tokens": 0}
        state.log_request(record)
        return response

    def answered(self, result: RoutedAnswer, budget: str | None, weights: tuple[float, float],
                 latency_s: float) -> dict[str, Any]:
        """An answered request's record."""
        tokens_in, tokens_out = result.host_tokens
        margin = result.margin
        return self.base(200) | {
            "latency_ms": round(latency_s * 1000.0, 3), "router": result.checkpoint_id, "budget": budget,
            "lambda_in": weights[0] if result.weights else None, "lambda_out": weights[1] if result.weights else None,
            "arm": result.arm, "margin": None if margin is None else round(margin, 6),
            "tokens_in": tokens_in, "tokens_out": tokens_out, "tokens": result.tokens,
            "host_calls": result.host_calls, "routing_ms": round(result.routing_ms, 3),
            "question": result.question[:300], "evidence": [hit.document.title for hit in result.evidence.passages],
            "guard": result.guard_record()}

    def forwarded(self, routed: RoutedRequest, tokens_in: int, tokens_out: int, latency_s: float) -> dict[str, Any]:
        """A gateway's routed request's record, once the host answered (one host call)."""
        return self.routed(routed.decision, routed.router, routed.budget, routed.weights) | {
            "latency_ms": round(latency_s * 1000.0, 3), "tokens_in": tokens_in, "tokens_out": tokens_out,
            "tokens": tokens_in + tokens_out, "host_calls": 1, "question": routed.decision.evidence.question[:300],
            "evidence": [hit.document.title for hit in routed.decision.evidence.passages]}

    def passed(self, reason: str) -> dict[str, Any]:
        """A gateway's request let through unrouted (fail open): its record says why."""
        return self.base(200) | {"passed": reason, "host_calls": 1, "tokens_in": 0, "tokens_out": 0, "tokens": 0}

    def routed(self, decision: DryRoute, router: str, budget: str | None, weights: tuple[float, float]) -> dict:
        """A dry route's record (no host call, no token)."""
        margin = decision.margin
        return self.base(200) | {
            "router": router, "budget": budget, "lambda_in": weights[0], "lambda_out": weights[1],
            "arm": decision.arm, "margin": None if margin is None else round(margin, 6), "host_calls": 0,
            "tokens_in": 0, "tokens_out": 0, "tokens": 0, "routing_ms": round(decision.routing_ms, 3),
            "guard": decision.guard_record()}


def _weights_for(state: ServerState, model: str, client: str) -> tuple[str | None, tuple[float, float]]:
    """The budget and weights of a request to `model`: the `forge` model's fixed weights or its
    client's budget; other routers at the paper's defaults."""
    if model == ROUTER_MODEL:
        return state.weights.for_client(client)
    return None, (DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT)


def budget_attributes(state: ServerState, budget: str | None, weights: tuple[float, float]) -> dict[str, Any]:
    """A request span's weights and budget (`forge_core.telemetry`)."""
    return {"forge.lambda_in": weights[0], "forge.lambda_out": weights[1], "forge.budget": budget,
            "forge.budget_target": state.weights.target(budget)}


def _routed(state: ServerState) -> list[str]:
    return [name for name, target in state.models.items() if isinstance(target, str)]


def _shadow_work(state: ServerState, asked: ChatRequest, result: RoutedAnswer, request_id: str,
                 weights: tuple[float, float]) -> BackgroundTask | None:
    """What runs once the response has been sent: Always-Raw's cost, the candidate's answer."""
    raw = state.shadow.take()
    candidate = asked.model == ROUTER_MODEL and state.candidate.take()
    if not raw and not candidate:
        return None

    async def work() -> None:
        if raw:
            record = await shadow_raw(state.client, state.metrics, asked.model, result, asked.chat)
            if record is not None:
                state.log_request(shadow_record(request_id, "raw", record))
        if candidate:
            record = await state.candidate.run(state.client, state.retriever, state.checkpoints[state.candidate.id],
                                               result, asked.chat, weights, state.evaluator)
            state.log_request(shadow_record(request_id, "candidate", record))

    return BackgroundTask(work)


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
        while health_status(url) in (None, "loading"):
            if time.monotonic() > deadline or not thread.is_alive():
                raise HostError(f"the server on {url} did not finish loading within {timeout_s:.0f} s")
            time.sleep(0.2)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def health_status(url: str) -> str | None:
    """What `GET /health` says (loading, ok or failed), or None when nothing answers."""
    try:
        return httpx.get(f"{url}/health", timeout=5).json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def _admit(state: ServerState, request: Request, endpoint: str) -> tuple[RequestEntry, Response | None]:
    """A logged endpoint's prologue: its traffic-log entry, started now, and the refusal to send (logged
    as such) when the key is wrong or the server not ready (None: go on)."""
    entry = RequestEntry.start(request, endpoint)
    refused = _refusal(state, request)
    return entry, entry.refused(state, refused) if refused else None


def _invalid(state: ServerState, error: Exception, param: str | None = None) -> JSONResponse:
    """400 for a request FORGE cannot honour (`param`: the field at fault, when one is)."""
    return _error(state, 400, str(error), "invalid_request_error", param)


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


async def _read_route_request(request: Request) -> ChatRequest:
    """A dry route's request: `{"model": ..., "question": ...}`, or a full chat body (system text,
    history and settings shape the host request it returns; tools are refused as in a chat)."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise RefusedField("the body is not JSON", None) from None
    if not isinstance(body, dict):
        raise RefusedField("the body must be a JSON object", None)
    if "question" in body:
        unknown = sorted(set(body) - {"model", "question"})
        if unknown:
            raise RefusedField(f"unknown field `{unknown[0]}` (send `model` and `question`, or a chat body)",
                               unknown[0])
        if not isinstance(body["question"], str):
            raise RefusedField("`question` must be a string", "question")
        return ChatRequest(str(body.get("model") or DEFAULT_MODEL), body["question"], ClientChat(), False)
    return parse_chat_request(body)


def _mix_draw(state: ServerState, asked: ChatRequest) -> dict[str, Any]:
    """For the `--mix` model, the arm the question draws, the draw and the mix (`mix`, `mix_arm`,
    `mix_draw`: what the traffic log, the `forge` object and the headers name); {} for any other."""
    target = state.models[asked.model]
    if not isinstance(target, ArmMix):
        return {}
    arm, draw = target.arm_for(asked.question)
    return draw_record(target.option, arm.name, draw)


def _answer_headers(result: RoutedAnswer, drawn: dict[str, Any]) -> dict[str, str]:
    """An answer's headers, sent before a stream's first chunk: under a mix `x-forge-arm` and
    `x-forge-mix`, under a guard `x-forge-guard` (held or deviated); none otherwise."""
    headers = {"x-forge-arm": drawn["mix_arm"], "x-forge-mix": drawn["mix"]} if drawn else {}
    guard = result.guard_record()
    if guard is not None:
        headers |= {"x-forge-arm": result.arm, "x-forge-guard": "held" if guard["held"] else "deviated"}
    return headers


async def _answer(state: ServerState, asked: ChatRequest, weights: tuple[float, float],
                  drawn: dict[str, Any]) -> RoutedAnswer:
    """Route (or take the fixed arm, or the arm the mix drew: `drawn`) at `weights` and answer inside
    the client's conversation: no Always-Raw call."""
    target = state.models[asked.model]
    arm = parse_arm(drawn["mix_arm"]) if drawn else target if isinstance(target, Arm) else None
    return await route_and_answer(
        state.store, state.client, state.retriever, asked.question, state.settings.benchmark,
        checkpoint=state.checkpoints[target] if isinstance(target, str) else None,
        arm=arm, chat=asked.chat, weights=CostWeights(*weights),
        guard=state.guard_for(asked))


def _error(state: ServerState, status: int, message: str, kind: str, param: str | None = None) -> JSONResponse:
    state.metrics.record_error(status)
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": None}},
                        status_code=status)


def _usage(result: RoutedAnswer) -> dict[str, int]:
    tokens_in, tokens_out = result.host_tokens
    return {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def _completion(model: str, result: RoutedAnswer, drawn: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": result.answer.answer}}],
            "usage": _usage(result), "forge": result.to_json() | drawn}


async def _chunks(model: str, result: RoutedAnswer, drawn: dict[str, Any]) -> AsyncIterator[str]:
    """The answer as OpenAI chunks: the role, the content, then the finish with usage and `forge`."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}
    deltas = [{"role": "assistant", "content": ""}, {"content": result.answer.answer}]
    for delta in deltas:
        yield _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": _usage(result),
                  "forge": result.to_json() | drawn})
    yield "data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"
