"""A test double of a host that streams: a local OpenAI-compatible server answering `stream: true`
requests with server-sent chunks (the usage in a last chunk when `stream_options.include_usage` is
set) and other requests with one JSON body, with `CountingHost`'s usage; it keeps every body."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.counting_host import CountingHost
from support.local_http import LocalHttpServer


class StreamingHost(LocalHttpServer):
    """Answers "answer" (streamed or not) with `CountingHost.usage`; `received` holds the bodies."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._listen()

    def events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks of a streamed answer."""
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        chunks = [base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "answer"},
                                       "finish_reason": None}]},
                  base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(base | {"choices": [], "usage": CountingHost.usage(body)})
        return chunks

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.lock:
                    server.received.append(body)
                if body.get("stream"):
                    data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in server.events(body))
                    data, kind = (data + "data: [DONE]\n\n").encode(), "text/event-stream"
                else:
                    data = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                                       "model": body["model"], "usage": CountingHost.usage(body),
                                       "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": "answer"}}]}).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
