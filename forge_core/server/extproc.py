"""`forge extproc`: FORGE as an Envoy external processor (`envoy.service.ext_proc.v3`, over gRPC).

Envoy (or an Envoy-based gateway: Envoy AI Gateway, the Gateway API inference extension) opens one
`Process` stream per HTTP request and sends its phases in order, each answered before the next:
- request headers: kept (the client's name for its budget, `forge_core.server.deployment`); continue.
- the request body, buffered whole (`request_body_mode: BUFFERED`): a chat-completions body is
  routed by `GatewayRouter` (`forge_core.server.gateway`: `forge serve`'s routers, weights,
  budgets, metrics and traffic log) and replaced by the host request FORGE would send (evidence in
  the messages, the host's thinking fields for the arm), with a corrected `content-length` and
  the headers `x-forge-arm`, `x-forge-margin` (utility units), `x-forge-weights`, `x-forge-router`
  and `x-forge-budget` (to the host); under a mix of fixed arms (`--mix`) the arm the question
  draws, with `x-forge-mix`; under a guard (`--guard`), `x-forge-guard` (held or deviated). On a
  body it cannot route (not JSON, tools, a refused field or question) or on its own error, the
  body passes unchanged (fail open) with `x-forge-passed: <reason>`, counted in
  `GatewayRouter.passed`.
- response headers: the same `x-forge-*` headers are added for the client; the status is kept.
- the response body (buffered, or streamed chunk by chunk): at its end, its `usage` (JSON, or the
  last server-sent event carrying one) counts against the client's budget and the request is
  logged, as `forge serve` logs an answer; the body passes unchanged.
Any phase Envoy is not configured to send is simply never seen. The host FORGE names (`--host`) is
the upstream Envoy forwards to: its model name and depth map make the body.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from envoy.config.core.v3.base_pb2 import HeaderValue, HeaderValueOption
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3.external_processor_pb2_grpc import (
    ExternalProcessorServicer,
    add_ExternalProcessorServicer_to_server,
)

from forge_core.server.app import ServeSettings
from forge_core.server.gateway import OWN_ERROR, UNSUPPORTED, GatewayRequest, GatewayRouter, forwarded_body
from forge_core.store import Store

log = logging.getLogger(__name__)

PASSED_HEADER = "x-forge-passed"
DEFAULT_WORKERS = 16  # streams handled at once (threads)


class RequestStream:
    """One HTTP request's `Process` stream: its headers, routing and response status."""

    def __init__(self, gateway: GatewayRouter) -> None:
        self.gateway = gateway
        self.headers: dict[str, str] = {}
        self.request: GatewayRequest | None = None
        self.status = 200
        self.response = b""  # the response body so far

    def respond(self, message: ext_proc.ProcessingRequest) -> ext_proc.ProcessingResponse:
        """The answer to one phase; FORGE's own error lets the phase through unchanged (fail open)."""
        phase = message.WhichOneof("request")
        try:
            return getattr(self, phase)(getattr(message, phase))
        except Exception:  # noqa: BLE001 - fail open: Envoy's traffic must not fail with FORGE
            log.exception("forge extproc failed on %s; passing it unchanged", phase)
            if phase == "request_body" and self.request is None:
                self.gateway.count_passed(OWN_ERROR)
            return _response(phase, ext_proc.CommonResponse(header_mutation=_set({PASSED_HEADER: OWN_ERROR})))

    def request_headers(self, message: ext_proc.HttpHeaders) -> ext_proc.ProcessingResponse:
        self.headers = _headers(message.headers)
        return _response("request_headers", ext_proc.CommonResponse())

    def request_body(self, message: ext_proc.HttpBody) -> ext_proc.ProcessingResponse:
        try:
            body: Any = json.loads(message.body)
        except (ValueError, UnicodeDecodeError):
            body = None  # parse_chat_request refuses it: passed as unsupported
        self.request = self.gateway.route(body, self.headers, "extproc")
        routed = self.request.routed
        if routed is None:
            passed = _set({PASSED_HEADER: self.request.passed or UNSUPPORTED})
            return _response("request_body", ext_proc.CommonResponse(header_mutation=passed))
        data = json.dumps(forwarded_body(body, routed)).encode()
        headers = _set(routed.headers() | {"content-length": str(len(data))})
        return _response("request_body", ext_proc.CommonResponse(
            header_mutation=headers, body_mutation=ext_proc.BodyMutation(body=data)))

    def response_headers(self, message: ext_proc.HttpHeaders) -> ext_proc.ProcessingResponse:
        self.status = int(_headers(message.headers).get(":status", "200"))
        routed = None if self.request is None else self.request.routed
        mutation = _set(routed.headers()) if routed is not None else None
        return _response("response_headers", ext_proc.CommonResponse(header_mutation=mutation))

    def response_body(self, message: ext_proc.HttpBody) -> ext_proc.ProcessingResponse:
        self.response += message.body  # whole when buffered; chunk by chunk when streamed
        if message.end_of_stream and self.request is not None and self.request.routed is not None:
            if self.status >= 400:
                self.gateway.failed(self.request, self.status)
            else:
                self.gateway.answered(self.request, _usage(self.response))
        return _response("response_body", ext_proc.CommonResponse())

    def request_trailers(self, _: Any) -> ext_proc.ProcessingResponse:
        return ext_proc.ProcessingResponse(request_trailers=ext_proc.TrailersResponse())

    def response_trailers(self, _: Any) -> ext_proc.ProcessingResponse:
        return ext_proc.ProcessingResponse(response_trailers=ext_proc.TrailersResponse())


class ForgeExternalProcessor(ExternalProcessorServicer):
    """The `ExternalProcessor` service: one `RequestStream` per `Process` stream."""

    def __init__(self, gateway: GatewayRouter) -> None:
        self.gateway = gateway

    def Process(self, request_iterator: Iterator[ext_proc.ProcessingRequest],  # noqa: N802 - the gRPC method
                context: grpc.ServicerContext) -> Iterator[ext_proc.ProcessingResponse]:
        """Answer each phase of one HTTP request as it comes."""
        stream = RequestStream(self.gateway)
        for message in request_iterator:
            yield stream.respond(message)


def start_extproc(store: Store, settings: ServeSettings, port: int, bind: str = "127.0.0.1",
                  workers: int = DEFAULT_WORKERS) -> tuple[grpc.Server, GatewayRouter, int]:
    """Load FORGE's routing and start the gRPC server on `bind:port` (0: a free port); returns the
    server, its `GatewayRouter` and the port bound. Stop it with `server.stop(grace)` and close the
    router."""
    gateway = GatewayRouter(store, settings)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    add_ExternalProcessorServicer_to_server(ForgeExternalProcessor(gateway), server)
    bound = server.add_insecure_port(f"{bind}:{port}")
    server.start()
    return server, gateway, bound


def _headers(message: Any) -> dict[str, str]:
    """An Envoy `HeaderMap` as a dict of lower-case names (`raw_value` when set, else `value`)."""
    return {h.key.lower(): (h.raw_value.decode("latin-1") if h.raw_value else h.value) for h in message.headers}


def _set(headers: dict[str, str]) -> ext_proc.HeaderMutation:
    """A mutation setting (overwriting) these headers."""
    return ext_proc.HeaderMutation(set_headers=[
        HeaderValueOption(header=HeaderValue(key=name, raw_value=value.encode("latin-1")),
                          append_action=HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD)
        for name, value in headers.items()])


def _response(phase: str, common: ext_proc.CommonResponse) -> ext_proc.ProcessingResponse:
    """The response to a headers or body phase."""
    if phase in ("request_headers", "response_headers"):
        return ext_proc.ProcessingResponse(**{phase: ext_proc.HeadersResponse(response=common)})
    if phase in ("request_body", "response_body"):
        return ext_proc.ProcessingResponse(**{phase: ext_proc.BodyResponse(response=common)})
    return ext_proc.ProcessingResponse(**{phase: ext_proc.TrailersResponse()})


def _usage(body: bytes) -> dict[str, Any] | None:
    """The `usage` of a chat-completions response: a JSON body, or the last server-sent event carrying one."""
    try:
        return json.loads(body).get("usage")
    except (ValueError, UnicodeDecodeError, AttributeError):
        pass
    usage = None
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:") and '"usage"' in line:
            try:
                usage = json.loads(line[5:]).get("usage") or usage
            except ValueError:
                continue
    return usage
