"""A chat request routed without calling the host: the decision and the host request it becomes.

The one shape of a routing decision that leaves FORGE before the host answers: the dry route's
response (`POST /v1/route`), the LiteLLM hook's rewrite of a request
(`forge_core.gateways.litellm_hook`) and the Envoy external processor's body mutation (`forge
extproc`) all come from a `RoutedRequest` (built by `ServerState.route_chat`). `body` is exactly
what `forge serve` would send the host for this request: FORGE's system message with the client's,
the client's history, the arm's user message (evidence, question, instruction) and the host's
thinking fields for the arm (`forge_core.hosts.depth_maps`). Under `forge serve --mix` the decision
is the arm the question draws (`forge_core.policies.arm_mix`): its router is `mix`, and it names the mix
and the draw instead of weights and a margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge_core.hosts.anthropic import messages_body
from forge_core.hosts.base import GenerationRequest, HostConfig, estimate_tokens
from forge_core.hosts.openai_compat import chat_completion_body
from forge_core.policies.arm_mix import draw_record, mix_attributes
from forge_core.routing.live import OVERRIDE, DryRoute

HEADER_PREFIX = "x-forge-"
BODY_FIELDS = ("model", "messages")  # a host body's fields that are not generation or thinking settings


def host_body(config: HostConfig, request: GenerationRequest) -> dict[str, Any]:
    """The body the host `config` is sent for `request` (chat completions, or Anthropic's messages)."""
    if config.protocol == "anthropic":
        return messages_body(config, request)
    return chat_completion_body(config, request)


@dataclass(frozen=True)
class RoutedRequest:
    """A routed chat request, ready to be sent to the host by whoever forwards it."""

    model: str  # the FORGE model routed (`forge`, `forge-lite`, ...)
    router: str  # its checkpoint id
    decision: DryRoute
    budget: str | None  # the budget the client counts against (None: fixed weights)
    weights: tuple[float, float]  # (lambda_in, lambda_out) routed at
    body: dict[str, Any]  # the host's request body (chat completions for an OpenAI-compatible host)
    mix: str | None = None  # under `--mix`: the mix (ARM=SHARE,...) the arm was drawn from
    mix_draw: float | None = None  # and the question's draw in [0, 1)

    @property
    def weighted(self) -> bool:
        """Whether a router decided at the weights (not a fixed arm, nor a mix's draw)."""
        return self.mix is None and self.router != OVERRIDE

    @property
    def arm(self) -> str:
        """The arm chosen."""
        return self.decision.arm

    @property
    def evidence_text(self) -> str:
        """The evidence the arm adds to the prompt ("" for direct)."""
        return self.decision.evidence.support_text(self.arm.split(":")[0])

    @property
    def settings(self) -> dict[str, Any]:
        """The host body's generation and thinking fields (everything but model and messages)."""
        return {name: value for name, value in self.body.items() if name not in BODY_FIELDS}

    def headers(self) -> dict[str, str]:
        """The decision as HTTP headers: arm, margin (utility units), weights, router, budget, and
        under a guard whether it held the query; under a mix, the arm, router `mix` and the mix; under
        a fixed arm, the arm and router `override`."""
        margin = self.decision.margin
        weights = f"{self.weights[0]:g},{self.weights[1]:g}" if self.weighted else ""
        headers = {"arm": self.arm, "margin": "" if margin is None else f"{margin:.6f}", "weights": weights,
                   "router": self.router, "budget": self.budget or "", "mix": self.mix or "",
                   "guard": self._guard_header()}
        return {HEADER_PREFIX + name: value for name, value in headers.items() if value}

    def _guard_header(self) -> str:
        """Under a guard: "held" (answered by its fallback) or "deviated" ("" without a guard)."""
        guard = self.decision.guard_record()
        return "" if guard is None else "held" if guard["held"] else "deviated"

    def metadata(self) -> dict[str, Any]:
        """The decision as a JSON object (a LiteLLM response's metadata, the dry route's core)."""
        margin = self.decision.margin
        return {"model": self.model, "router": self.router, "arm": self.arm,
                "margin": None if margin is None else round(margin, 6),
                "weights": {"lambda_in": self.weights[0], "lambda_out": self.weights[1]} if self.weighted else None,
                "budget": self.budget, "evidence": [hit.document.title for hit in self.decision.evidence.passages],
                "evidence_tokens": estimate_tokens(self.evidence_text),
                "routing_ms": round(self.decision.routing_ms, 1),
                "guard": self.decision.guard_record()} | self.record_fields()

    def span_attributes(self) -> dict[str, Any]:
        """The routing span's attributes (`forge_core.telemetry`): the decision's, and under a mix the mix's."""
        return self.decision.span_attributes(self.weights) | mix_attributes(self.record_fields())

    def record_fields(self) -> dict[str, Any]:
        """What a record adds where no router weighed the arm: no weights, and under a mix the mix,
        the arm it drew and the draw; {} for a router's decision."""
        if self.weighted:
            return {}
        drawn = {} if self.mix is None else draw_record(self.mix, self.arm, self.mix_draw)
        return drawn | {"lambda_in": None, "lambda_out": None}

    def to_json(self) -> dict[str, Any]:
        """`POST /v1/route`'s response: the decision, every arm's probability, the passages retrieved,
        the evidence the arm adds and the host request it becomes; no host call made."""
        passages = [{"title": hit.document.title, "id": hit.document.doc_id, "score": round(hit.score, 6)}
                    for hit in self.decision.evidence.passages]
        return self.metadata() | {
            "probabilities": {arm: round(p, 6) for arm, p in self.decision.probabilities.items()},
            "passages": passages, "evidence_text": self.evidence_text, "settings": self.settings,
            "request": self.body, "host_calls": 0}
