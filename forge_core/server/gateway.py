"""FORGE inside a gateway that forwards the request to the host itself (the LiteLLM hook, `forge
extproc` for Envoy): route a chat-completions body, rewrite it, and account for the answer.

`GatewayRouter` wraps the same `ServerState` as `forge serve` (routers, retriever, weights and
budgets, metrics, traffic log; the host is never started or called: its configuration only names
the model and the thinking fields of the body). `route` parses the client's body with `forge
serve`'s rules (`forge_core.server.chat_request`) and routes it with `ServerState.route_chat`, at
the weights in force for the client (`X-Forge-Client`, or the bearer key's hash); `forwarded_body`
is the body the host then gets. It fails open: a body FORGE cannot route (not JSON, tools, an
unsupported field, a question it refuses) or an error of its own leaves the request unchanged, is
counted by reason (`passed`) and logged with `passed` in its traffic-log record. `answered`
charges the host's usage to the client's budget and logs the request as `forge serve` does.
Each routed request is one `chat forge` span (`forge_core.telemetry`), from routing to answer.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge_core import telemetry
from forge_core.errors import ForgeError
from forge_core.server.app import ROUTER_MODEL, RequestEntry, ServerState, ServeSettings, budget_attributes
from forge_core.server.chat_request import RefusedField, parse_chat_request
from forge_core.server.routed_request import RoutedRequest
from forge_core.store import Store

log = logging.getLogger(__name__)

CLIENT_FIELDS = ("stream", "stream_options", "user", "metadata")  # kept from the client's body: not FORGE's to set
UNSUPPORTED = "unsupported"  # `passed`: a body FORGE does not route (not JSON, tools, an unknown field, ...)
REFUSED = "refused"  # `passed`: a question FORGE refuses (empty, too long, ...)
OWN_ERROR = "forge_error"  # `passed`: FORGE's own failure


@dataclass
class GatewayRequest:
    """One request as a gateway routed it (or let it through: `routed` None, `passed` the reason)."""

    entry: RequestEntry
    routed: RoutedRequest | None
    passed: str | None
    span: Any = None  # the request span (None when tracing is off)


class GatewayRouter:
    """FORGE's routing for a gateway (module docstring); thread-safe."""

    def __init__(self, store: Store, settings: ServeSettings) -> None:
        """Load the routers, retriever and weights now (seconds, once), not the host."""
        self.state = ServerState(store, settings)
        self.state.load_without_host()
        self.passed: Counter[str] = Counter()  # requests let through unchanged, by reason
        self._lock = threading.Lock()

    def route(self, body: Any, headers: Mapping[str, str], endpoint: str) -> GatewayRequest:
        """Route a chat-completions body (parsed JSON) sent with `headers` at the client's weights;
        on anything FORGE cannot route, the request passes unchanged (module docstring)."""
        entry = RequestEntry.from_headers(headers, endpoint)
        entry.model = ROUTER_MODEL
        span = telemetry.start_span(telemetry.REQUEST_SPAN, telemetry.request_attributes(ROUTER_MODEL), "SERVER")
        try:
            asked = dataclasses.replace(parse_chat_request(body), model=ROUTER_MODEL)
            with telemetry.within(span):
                routed = self.state.route_chat(asked, entry.client)
        except RefusedField as error:
            return self.pass_through(entry, span, UNSUPPORTED, str(error))
        except ForgeError as error:
            return self.pass_through(entry, span, REFUSED, str(error))
        except Exception as error:  # noqa: BLE001 - fail open: the gateway's traffic must not fail with FORGE
            log.exception("routing failed; the request passes unchanged")
            return self.pass_through(entry, span, OWN_ERROR, f"{type(error).__name__}: {error}")
        telemetry.set_attributes(span, routed.span_attributes()
                                 | budget_attributes(self.state, routed.budget, routed.weights))
        return GatewayRequest(entry, routed, None, span)

    def count_passed(self, kind: str) -> None:
        """One more request let through unchanged for `kind` (UNSUPPORTED, REFUSED or OWN_ERROR)."""
        with self._lock:
            self.passed[kind] += 1

    def pass_through(self, entry: RequestEntry, span: Any, kind: str, reason: str) -> GatewayRequest:
        """A request let through unchanged (`kind`: UNSUPPORTED, REFUSED or OWN_ERROR): counted,
        logged with the reason, its span ended."""
        self.count_passed(kind)
        self.state.log_request(entry.passed(f"{kind}: {reason}"))
        telemetry.end_span(span, {"forge.passed": kind})
        return GatewayRequest(entry, None, kind)

    def answered(self, request: GatewayRequest, usage: Mapping[str, Any] | None) -> None:
        """The host answered a routed request with this OpenAI `usage` (None: none came back):
        its tokens count against the client's budget, and the request is logged."""
        if request.routed is None:
            return
        usage = usage or {}
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
        self.state.record_forwarded(request.entry, request.routed, tokens_in, tokens_out)
        telemetry.end_span(request.span, telemetry.usage_attributes(tokens_in, tokens_out, reasoning)
                           | {"forge.host_calls": 1})

    def failed(self, request: GatewayRequest, status: int) -> None:
        """The host failed a routed request (`status`): logged as `forge serve` logs a failure."""
        if request.routed is not None:
            self.state.log_request(request.entry.base(status) | {"arm": request.routed.arm, "host_calls": 1,
                                                                  "tokens_in": 0, "tokens_out": 0, "tokens": 0})
            telemetry.end_span(request.span, {"error.type": str(status)})

    def close(self) -> None:
        """Close the traffic log."""
        if self.state.traffic is not None:
            self.state.traffic.close()


def forwarded_body(original: Mapping[str, Any], routed: RoutedRequest) -> dict[str, Any]:
    """The body the host gets in place of the client's: FORGE's host request (model, messages with
    the evidence, generation and thinking fields), with the client's stream and user fields."""
    return {name: original[name] for name in CLIENT_FIELDS if name in original} | routed.body
