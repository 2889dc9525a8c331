"""A test double: a local HTTP server that speaks one thinking engine's wire format (vLLM, SGLang,
llama.cpp, OpenAI, Anthropic) and reasons as that engine's fields ask, or misbehaves on purpose.

The "model" wants `natural_reasoning` tokens of reasoning on every question. When thinking is on
it reasons `min(natural, budget x overshoot)` tokens, or `natural` when it ignores budgets. Like
Qwen3 templates, the chat engines think when `enable_thinking` is missing; `thinks_when_off`
makes the off field itself ignored. Reasoning is returned the way each engine returns it (text
of n word pieces, `usage.completion_tokens_details` for OpenAI, thinking blocks for Anthropic),
and counted inside the output tokens, as every engine does. The output cap is kept: reasoning
that reaches it ends the call there (`finish_reason` "length", no answer). The vLLM double
continues a partial assistant message (`continue_final_message`) holding a closed think block
with the answer alone, as budget forcing needs; the llama.cpp double does the same through
llama-server's `POST /apply-template` (a ChatML rendering) and raw `POST /completion`.

With `tokenizes`, the vLLM and llama.cpp doubles serve their engine's `POST /tokenize` (one token
per whitespace-separated word, the double's "tokenizer": exact for its reasoning text, where the
word-piece estimate counts "step." as two); `tokenize_requests` keeps what they were asked.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer

ANSWER = "Paris"
ANSWER_TOKENS = 1
EFFORT_REASONING = {"none": 0, "minimal": 50, "low": 300, "medium": 800}  # "high": the natural amount


@dataclass(frozen=True)
class Engine:
    """How the double behaves."""

    name: str  # vllm, sglang, llamacpp, openai or anthropic
    natural_reasoning: int = 2000  # tokens the model would reason without a budget
    honours_budget: bool = True  # False: budget fields are ignored
    overshoot: float = 1.0  # reasoning allowed past a budget (a soft budget: e.g. 1.5)
    thinks_when_off: bool = False  # True: the off field is ignored too
    refuses_budget_tokens: bool = False  # Anthropic: HTTP 400 for `thinking.type` "enabled" (adaptive-only models)
    tokenizes: bool = False  # vLLM/llama.cpp: serve the engine's /tokenize
    reasoning_word: str = "step"  # reasoning text is this word n times (one token each)
    template_opens_think: bool = False  # llama.cpp: /apply-template ends a thinking prompt with "<think>\n" (R1)


NOT_FOUND = (404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})


class ThinkingServer(LocalHttpServer):
    """Serves one `Engine` on 127.0.0.1; keeps every request body it received."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.received: list[dict[str, Any]] = []  # generation requests (tokenize requests aside)
        self.received_paths: list[str] = []  # their paths
        self.tokenize_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._listen()

    # ------------------------------------------------------------ what the engine reasons

    def _bounded(self, budget: int | None) -> int:
        natural = self.engine.natural_reasoning
        if budget is None or not self.engine.honours_budget:
            return natural
        return min(natural, int(budget * self.engine.overshoot))

    def _chat_template_reasoning(self, body: dict[str, Any]) -> int:
        kwargs = body.get("chat_template_kwargs") or {}
        if kwargs.get("enable_thinking", True) is False and not self.engine.thinks_when_off:
            return 0
        budget = {"vllm": body.get("thinking_token_budget"), "sglang": kwargs.get("thinking_budget"),
                  "llamacpp": body.get("reasoning_budget_tokens")}[self.engine.name]
        return self._bounded(budget)

    def _openai_reasoning(self, body: dict[str, Any]) -> int:
        effort = body.get("reasoning_effort", "medium")  # reasoning models reason by default
        if effort == "none":
            if not self.engine.thinks_when_off:
                return 0
            effort = "medium"
        if not self.engine.honours_budget:
            return self.engine.natural_reasoning
        return EFFORT_REASONING.get(effort, self.engine.natural_reasoning)

    def _anthropic_reasoning(self, body: dict[str, Any]) -> int:
        thinking = body.get("thinking") or {"type": "disabled"}
        if thinking["type"] == "disabled" and not self.engine.thinks_when_off:
            return 0
        if thinking["type"] == "adaptive":
            effort = (body.get("output_config") or {}).get("effort", "high")
            return EFFORT_REASONING.get(effort, self.engine.natural_reasoning)
        return self._bounded(thinking.get("budget_tokens"))

    # ------------------------------------------------------------ wire formats

    def respond(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body) for one request: an adaptive-only model refuses budgets; paths the
        engine does not serve are HTTP 404."""
        if path.endswith("tokenize") or path.endswith("tokenize/count"):
            with self.lock:
                self.tokenize_requests.append(body)
            return self._tokenize(path, body)
        with self.lock:
            self.received.append(body)
            self.received_paths.append(path)
        if path in ("/apply-template", "/completion"):
            if self.engine.name != "llamacpp":
                return NOT_FOUND
            return 200, self._apply_template(body) if path == "/apply-template" else self._raw_completion(body)
        if self.engine.refuses_budget_tokens and (body.get("thinking") or {}).get("type") == "enabled":
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "thinking.type 'enabled' is not supported"}}
        return 200, self.reply(path, body)

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The engine's response body to one request."""
        cap = body.get("max_completion_tokens", body.get("max_tokens"))
        if path.endswith("/messages"):
            return self._messages_reply(min(self._anthropic_reasoning(body), cap), cap)
        if self.engine.name == "openai":
            n = min(self._openai_reasoning(body), cap)
            return self._chat_reply(n, cap, {}, {"completion_tokens_details": {"reasoning_tokens": n}})
        n = 0 if self._continues_after_thinking(body) else min(self._chat_template_reasoning(body), cap)
        field = "reasoning" if self.engine.name == "vllm" else "reasoning_content"
        return self._chat_reply(n, cap, {field: self._reasoning_text(n) if n else None}, {})

    def _reasoning_text(self, n: int) -> str:
        return " ".join([self.engine.reasoning_word] * n)

    # ------------------------------------------------------------ other endpoints

    def _tokenize(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """llama-server: `{"content"}` -> `{"tokens"}` (no content: no tokens, as llama-server
        answers); vLLM: `{"prompt"}` -> `{"count", "tokens"}` (no prompt: HTTP 400)."""
        if not self.engine.tokenizes or path != "/tokenize" or self.engine.name not in ("llamacpp", "vllm"):
            return NOT_FOUND
        if self.engine.name == "llamacpp":
            return 200, {"tokens": list(range(len(str(body.get("content", "")).split())))}
        if not isinstance(body.get("prompt"), str):
            return 400, {"error": {"message": "prompt: field required", "type": "BadRequestError"}}
        tokens = list(range(len(body["prompt"].split())))
        return 200, {"count": len(tokens), "tokens": tokens, "max_model_len": 8192}

    def _apply_template(self, body: dict[str, Any]) -> dict[str, Any]:
        """A ChatML rendering with the generation prompt; Qwen3-style: an empty closed block when
        thinking is off, an opened one when the template opens it."""
        turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in body["messages"])
        prompt = turns + "<|im_start|>assistant\n"
        if (body.get("chat_template_kwargs") or {}).get("enable_thinking", True) is False:
            prompt += "<think>\n\n</think>\n\n"
        elif self.engine.template_opens_think:
            prompt += "<think>\n"
        return {"prompt": prompt}

    def _raw_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """A prompt whose assistant turn holds a closed think block is answered at once; any other
        reasons again (inline, as a server without a reasoning parser returns it)."""
        prompt, cap = body["prompt"], body["n_predict"]
        assistant = prompt.rpartition("<|im_start|>assistant\n")[2]
        n = 0 if "</think>" in assistant else min(self._chat_template_reasoning({}), cap)
        answered = n + ANSWER_TOKENS <= cap
        content = (f"<think>\n{self._reasoning_text(n)}\n</think>\n\n" if n else "") + (ANSWER if answered else "")
        return {"content": content, "tokens_predicted": n + ANSWER_TOKENS * answered,
                "tokens_evaluated": len(prompt.split()), "stop_type": "eos" if answered else "limit"}

    def _continues_after_thinking(self, body: dict[str, Any]) -> bool:
        last = body["messages"][-1]
        return (self.engine.name == "vllm" and body.get("continue_final_message") is True
                and last["role"] == "assistant" and "</think>" in last["content"])

    @staticmethod
    def _chat_reply(reasoning: int, cap: int, fields: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
        answered = reasoning + ANSWER_TOKENS <= cap
        out = reasoning + ANSWER_TOKENS if answered else reasoning
        message = {"role": "assistant", "content": ANSWER if answered else None, **fields}
        usage = {"prompt_tokens": 20, "completion_tokens": out, "total_tokens": 20 + out, **details}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop" if answered else "length"}],
                "usage": usage}

    @staticmethod
    def _messages_reply(reasoning: int, cap: int) -> dict[str, Any]:
        answered = reasoning + ANSWER_TOKENS <= cap
        thinking = {"type": "thinking", "thinking": " ".join(["step"] * reasoning), "signature": "s"}
        blocks = [thinking] if reasoning else []
        text = [{"type": "text", "text": ANSWER}] if answered else []
        return {"type": "message", "role": "assistant", "content": [*blocks, *text],
                "stop_reason": "end_turn" if answered else "max_tokens",
                "usage": {"input_tokens": 20, "output_tokens": reasoning + ANSWER_TOKENS * answered}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                status, payload = server.respond(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
