"""FORGE as a LiteLLM callback (`ForgeHook`): every chat completion LiteLLM sends (from its SDK, a
`Router`, or its proxy) is routed by FORGE before it reaches the host.

LiteLLM calls `async_pre_call_deployment_hook` once a deployment is chosen, just before the
request goes out, in the SDK, the `Router` and the proxy alike (its proxy-only
`async_pre_call_hook` runs before the deployment is known, and not at all from the SDK). There the
hook routes the request with `GatewayRouter` (`forge_core.server.gateway`: the routers, weights,
budgets and traffic log of `forge serve`, never a call of its own to the host) and rewrites it:
the messages become FORGE's (its system text with the client's, the history, the arm's evidence
and instruction), the standard generation fields FORGE's, and the host's thinking fields for the
arm go in `extra_body`. `async_post_call_success_deployment_hook` charges the answer's usage to
the client's budget, logs the request, and returns the decision in the response: a `forge` object
(arm, margin in utility units, weights, budget, router, evidence titles and tokens) and, for the
proxy, `x-forge-*` response headers (`async_post_call_response_headers_hook`). A streamed answer is
charged from LiteLLM's success log (its assembled usage). A request FORGE cannot route (tools, a
refused field or question, its own error) goes out unchanged (fail open; `GatewayRouter.passed` counts them).

A client is the `forge_client` of the request's metadata, else the proxy's `X-Forge-Client`
header, else its `user`. The host named in the settings is the model behind the LiteLLM
deployment: only its thinking fields and model name are used (the deployment's model is kept).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger
from litellm.types.utils import CallTypes, ModelResponse

from forge_core.server.app import ServeSettings
from forge_core.server.chat_request import IGNORED, NO_OP_VALUES, SETTINGS, WHY_REFUSED
from forge_core.server.deployment import CLIENT_HEADER
from forge_core.server.gateway import GatewayRequest, GatewayRouter
from forge_core.store import Store

log = logging.getLogger(__name__)

CHAT_CALLS = (CallTypes.acompletion, CallTypes.completion)
CHAT_FIELDS = ("messages", "stream", *SETTINGS, *IGNORED, *NO_OP_VALUES, *WHY_REFUSED)  # what FORGE reads or refuses
LITELLM_PARAMS = ("max_tokens", "temperature", "top_p", "seed", "stop")  # set as LiteLLM's own arguments
CLIENT_METADATA = "forge_client"
KEPT_PENDING = 10_000  # routed requests waiting for their answer at most
KEPT_HEADERS = 1024  # answered requests whose headers wait for the proxy (the SDK never asks)


class ForgeHook(CustomLogger):
    """A LiteLLM callback routing every chat completion with FORGE (module docstring)."""

    def __init__(self, store: Store, settings: ServeSettings) -> None:
        """Load FORGE's router, retriever and weights for `settings` (as `forge serve` takes them)."""
        super().__init__()
        self.gateway = GatewayRouter(store, settings)
        self._pending: OrderedDict[str, GatewayRequest] = OrderedDict()  # routed, by LiteLLM call id, until answered
        self._headers: OrderedDict[str, dict[str, str]] = OrderedDict()  # answered ones' headers, for the proxy

    def close(self) -> None:
        """Leave every LiteLLM callback list (LiteLLM copies a callback into several) and close the traffic log."""
        litellm.logging_callback_manager.remove_callback_from_all_lists(self)
        self.gateway.close()

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: CallTypes | None) -> dict | None:
        """Route the request and rewrite it (module docstring); None leaves it as it is."""
        if call_type not in CHAT_CALLS:
            return None
        body = {name: kwargs[name] for name in CHAT_FIELDS if kwargs.get(name) is not None}
        request = await asyncio.to_thread(self.gateway.route, body, _client_headers(kwargs), "litellm")
        if request.routed is None:
            return None
        self._pending[str(kwargs.get("litellm_call_id"))] = request
        while len(self._pending) > KEPT_PENDING:  # calls LiteLLM never reported back (cancelled): forgotten
            self._pending.popitem(last=False)
        host = request.routed.body
        rewritten = {name: value for name, value in kwargs.items() if name not in ("max_completion_tokens", *SETTINGS)}
        rewritten["messages"] = host["messages"]
        rewritten |= {name: host[name] for name in LITELLM_PARAMS if name in host}
        extra = {name: value for name, value in request.routed.settings.items() if name not in LITELLM_PARAMS}
        if extra:
            rewritten["extra_body"] = {**(kwargs.get("extra_body") or {}), **extra}
        rewritten["metadata"] = {**(kwargs.get("metadata") or {}), "forge": request.routed.metadata()}
        return rewritten

    async def async_post_call_success_deployment_hook(self, request_data: dict, response: Any,
                                                      call_type: CallTypes | None) -> Any:
        """Charge the answer's usage and put the decision in the response (not for a stream: see
        `async_log_success_event`)."""
        request = self._pending.get(str(request_data.get("litellm_call_id")))
        if request is None or not isinstance(response, ModelResponse):
            return None
        self._pending.pop(str(request_data.get("litellm_call_id")), None)
        self.gateway.answered(request, _usage(response))
        response.forge = request.routed.metadata()
        self._headers[str(request_data.get("litellm_call_id"))] = request.routed.headers()
        while len(self._headers) > KEPT_HEADERS:
            self._headers.popitem(last=False)
        return response

    async def async_post_call_response_headers_hook(self, data: dict, user_api_key_dict: Any, response: Any,
                                                    request_headers: dict | None = None,
                                                    litellm_call_info: dict | None = None) -> dict[str, str] | None:
        """The proxy's response headers: the decision as `x-forge-*` (arm, margin, weights, router, budget)."""
        return self._headers.pop(str(data.get("litellm_call_id")), None)

    async def async_log_success_event(self, kwargs: dict, response_obj: Any, start_time: Any, end_time: Any) -> None:
        """A streamed answer, once LiteLLM has assembled it: charge its usage."""
        request = self._pending.pop(str(kwargs.get("litellm_call_id")), None)
        if request is not None:
            self.gateway.answered(request, _usage(response_obj))

    async def async_post_call_failure_deployment_hook(self, request_data: Mapping[str, Any], exception: Exception,
                                                      call_type: CallTypes | None) -> None:
        """The host failed a routed request: logged with its status."""
        request = self._pending.pop(str(request_data.get("litellm_call_id")), None)
        if request is not None:
            self.gateway.failed(request, int(getattr(exception, "status_code", 0) or 502))


def _client_headers(kwargs: Mapping[str, Any]) -> dict[str, str]:
    """The headers FORGE names the client from (`forge_core.server.deployment.client_identity`)."""
    metadata = kwargs.get("metadata") or {}
    named = metadata.get(CLIENT_METADATA) or (metadata.get("headers") or {}).get(CLIENT_HEADER) or kwargs.get("user")
    return {CLIENT_HEADER: str(named)} if named else {}


def _usage(response: Any) -> dict[str, Any] | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    return usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
