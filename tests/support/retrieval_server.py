"""A test double: a local HTTP server speaking FORGE's retrieval protocol (POST {"query", "k"} ->
[{"title", "text", "score"}]), with injected latency and scripted replies (failures, a slow reply,
a malformed one), keeping every request it received."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer

PASSAGES = (
    {"title": "Service passage one", "text": "The service says the answer is Kathmandu.", "score": 2.5},
    {"title": "Service passage two", "text": "A second passage from the user's own index.", "score": 1.25},
    {"title": "Service passage three", "text": "A third passage, ranked last.", "score": 0.5},
    {"title": "Service passage four", "text": "A fourth passage beyond k.", "score": 0.1},
)
Reply = tuple[int, Any]  # (HTTP status, JSON body; a str body is sent as it is)
Script = Callable[[int], Reply | None]  # (request number from 1) -> a scripted reply, or None for the passages


class RetrievalServer(LocalHttpServer):
    """Answers with the first k of `PASSAGES` after `delay_s`, unless `script` says otherwise."""

    def __init__(self, delay_s: float = 0.0, script: Script | None = None) -> None:
        self.delay_s = delay_s
        self.script = script
        self.received: list[tuple[dict[str, Any], dict[str, str]]] = []  # (body, headers) of every request
        self.lock = threading.Lock()
        self._listen()

    @property
    def url(self) -> str:
        """The service's endpoint."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/retrieve"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.received.append((body, dict(self.headers)))
                    number = len(server.received)
                time.sleep(server.delay_s)
                scripted = server.script(number) if server.script else None
                status, reply = scripted or (200, list(PASSAGES[: body["k"]]))
                payload = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except ConnectionError:  # the client gave up waiting (a slow reply)
                    pass

        return Handler
