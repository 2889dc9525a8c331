"""A test double: a local HTTP server speaking the OpenAI chat-completions protocol that answers
every request with a deterministic text, optionally slowly or with scripted failures, and keeps
every request body it received."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer

FailureRule = Callable[[dict[str, Any], int], int | None]  # (body, attempt for this prompt) -> status
DelayRule = Callable[[dict[str, Any]], float]  # body -> seconds to wait before answering
RequestHook = Callable[[int], bool]  # (number of this request, from 1) -> True to drop it unanswered


def held_after(count: int, release: threading.Event) -> RequestHook:
    """An `on_request` hook: the first `count` requests are answered as usual, every later one once
    `release` is set. A job cannot finish while its calls are held, so a test interrupts it midway
    whatever the machine's speed; set `release` before the server stops."""

    def hook(number: int) -> bool:
        if number > count:
            release.wait()
        return False

    return hook


class AnsweringServer(LocalHttpServer):
    """Answers "answer <hash>" with usage counted from the prompt's characters; thread-based."""

    def __init__(self, delay_s: float | DelayRule = 0.0, fail: FailureRule | None = None, port: int = 0) -> None:
        self.delay_s = delay_s
        self.fail = fail
        self.attempts: dict[str, int] = {}
        self.received: list[tuple[float, dict[str, Any]]] = []  # (time.monotonic(), body) of every request
        self.answered_at: list[float] = []  # time.monotonic() after each successful answer was sent
        self.on_request: RequestHook | None = None  # called as each request arrives, before the delay
        self.lock = threading.Lock()
        self._listen(port)

    @staticmethod
    def usage(body: dict[str, Any]) -> dict[str, int]:
        """The usage the double reports for a request body: prompt tokens from its size, 2 out."""
        prompt_tokens = len(AnsweringServer._prompt(body)) // 4
        return {"prompt_tokens": prompt_tokens, "completion_tokens": 2, "total_tokens": prompt_tokens + 2}

    @staticmethod
    def _prompt(body: dict[str, Any]) -> str:
        return json.dumps(body["messages"]) + str(body.get("seed")) + str(body.get("temperature"))

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key = hashlib.sha1(self._prompt(body).encode()).hexdigest()[:8]
        with self.lock:
            attempt = self.attempts[key] = self.attempts.get(key, 0) + 1
        status = self.fail(body, attempt) if self.fail else None
        if status:
            return status, {"error": {"message": "scripted failure"}}
        text = f"answer {key}"
        return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                     "usage": self.usage(body)}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.lock:
                    server.received.append((time.monotonic(), body))
                    number = len(server.received)
                hook = server.on_request
                if hook and hook(number):
                    self.close_connection = True  # dropped: no answer
                    return
                delay = server.delay_s(body) if callable(server.delay_s) else server.delay_s
                threading.Event().wait(delay)
                status, payload = server.reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                if status == 200:
                    with server.lock:
                        server.answered_at.append(time.monotonic())

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
