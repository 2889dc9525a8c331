"""The lifecycle every local HTTP test double shares: a threading HTTP server on 127.0.0.1 (a free
port) served from a daemon thread, used as a context manager."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietHTTPServer(ThreadingHTTPServer):
    """Says nothing when a client goes away mid-request (the kill tests kill clients)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LocalHttpServer:
    """Serves `self._handler()` once entered; subclasses set their state, then call `_listen()`."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def _listen(self, port: int = 0) -> None:
        """Bind `port` (0: a free one; requests wait in the backlog until the server is entered)."""
        self.httpd = QuietHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL of the double."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
