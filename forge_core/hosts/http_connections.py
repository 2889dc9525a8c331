"""Kept-alive HTTP/1.1 connections to one endpoint, for the hosts' JSON POSTs.

The hosts send one kind of request: a JSON POST whose whole reply is read before it is used. This
module does only that, on asyncio's own transports (TLS by `ssl.create_default_context()`, as
aiohttp did), at about a quarter of aiohttp's CPU per request: at 256 requests in flight against
a 200 ms host one event loop must finish a call in under 0.78 ms of CPU, and aiohttp alone took
0.29 ms of it against 0.08 ms here (`bench/client_throughput.py`, docs/bench.md).

- The body is `json.dumps(body)` in UTF-8, byte for byte what aiohttp's `json=` sent.
- Replies framed by Content-Length, by chunked transfer coding, or (without either) by the
  server closing the connection; 1xx interim replies are skipped; gzip and deflate bodies are
  decoded (the request offers them, as aiohttp's did).
- A connection goes back to the idle list only after a complete reply that leaves it open
  (HTTP/1.1 without `Connection: close`); one the server closed while idle is dropped, never used.
  A request that fails or is cancelled (its timeout) closes its connection.
- No proxies (aiohttp's session ignored the environment's too), no redirects, no cookies.

The caller bounds the requests in flight (`EndpointPool` gives each endpoint `max_concurrency`
slots), so the connections never outnumber them. Create and use it within one event loop.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_HEAD_BYTES = 64 * 1024  # a reply's status line and headers; more is not an HTTP server we speak to
USER_AGENT = "forge"


class HttpProtocolError(Exception):
    """The connection ended early or the server's reply broke HTTP/1.1 framing."""


@dataclass(frozen=True)
class Reply:
    """An HTTP response read in full: status, headers (lower-case names) and the decoded body."""

    status: int
    headers: Mapping[str, str]  # lower-case names; repeated headers joined by ", "
    body: bytes


@dataclass(frozen=True)
class _Origin:
    """Where one URL's requests go: scheme, host, port, and the Host header's value."""

    host: str
    port: int
    tls: bool
    host_header: str


def _origin_and_target(url: str) -> tuple[_Origin, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host  # an IPv6 literal
    host_header = shown if port == (443 if tls else 80) else f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Origin(host, port, tls, host_header), target


def request_head(method: str, target: str, host_header: str, headers: Mapping[str, str], length: int) -> bytes:
    """The request line and headers of one request with a JSON body of `length` bytes."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}", "Accept: */*", "Accept-Encoding: gzip, deflate",
             f"User-Agent: {USER_AGENT}", "Content-Type: application/json"]
    for name, value in headers.items():
        if name.lower() in ("content-length", "host"):
            continue
        if any(character in name + value for character in "\r\n"):
            raise ValueError(f"the request header {name.strip()!r} holds a line break")
        lines.append(f"{name}: {value}")
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _ReplyReader:
    """Reads one reply from the bytes of a connection, as they come."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.keep_alive = False
        self.body_length: int | None = None  # by Content-Length
        self.chunked = False
        self.to_close = False  # the body runs to the end of the connection
        self.body = bytearray()
        self.head_read = False
        self.done = False

    def feed(self, data: bytes) -> None:
        """Take bytes received; sets `done` once the reply is complete."""
        self.buffer += data
        while not self.done:
            if not self.head_read and not self._read_head():
                return
            if self.head_read and not self._read_body():
                return

    def end_of_stream(self) -> None:
        """The server closed the connection: completes a reply that runs to the close, else fails."""
        if self.head_read and self.to_close:
            self.body += self.buffer
            self.buffer.clear()
            self.done = True
            return
        raise HttpProtocolError("the server closed the connection before the reply was complete")

    def _read_head(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise HttpProtocolError("the reply's headers are too long")
            return False
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        del self.buffer[:end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise HttpProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise HttpProtocolError(f"not a header line: {line[:80]!r}")
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        status = int(code)
        if 100 <= status < 200:
            return True  # an interim reply (100 Continue): the real one follows
        self.status, self.headers, self.head_read = status, headers, True
        connection = {token.strip().lower() for token in headers.get("connection", "").split(",")}
        self.keep_alive = version == "HTTP/1.1" and "close" not in connection
        if status in (204, 304):
            self.body_length = 0
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self.chunked = True
        elif "content-length" in headers:
            try:
                self.body_length = int(headers["content-length"].split(",")[0])
            except ValueError:
                raise HttpProtocolError("the reply's Content-Length is not a number") from None
        else:
            self.to_close, self.keep_alive = True, False
        return True

    def _read_body(self) -> bool:
        if self.to_close:
            self.body += self.buffer
            self.buffer.clear()
            return False
        if self.body_length is not None:
            if len(self.buffer) < self.body_length:
                return False
            self.body += self.buffer[:self.body_length]
            del self.buffer[:self.body_length]
            self.done = True
            return True
        return self._read_chunk()

    def _read_chunk(self) -> bool:
        line_end = self.buffer.find(b"\r\n")
        if line_end < 0:
            return False
        size_text = bytes(self.buffer[:line_end]).split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HttpProtocolError("a chunk size is not a hexadecimal number") from None
        if size == 0:  # the last chunk, then trailer lines (ignored) up to an empty line
            after = line_end + 2
            if self.buffer[after:after + 2] != b"\r\n" and self.buffer.find(b"\r\n\r\n", after) < 0:
                return False
            self.buffer.clear()
            self.done = True
            return True
        if len(self.buffer) < line_end + 2 + size + 2:
            return False
        start = line_end + 2
        self.body += self.buffer[start:start + size]
        del self.buffer[:start + size + 2]
        return True

    def decoded_body(self) -> bytes:
        """The body with its content coding (gzip or deflate) undone."""
        coding = self.headers.get("content-encoding", "identity").strip().lower()
        body = bytes(self.body)
        if coding in ("", "identity"):
            return body
        try:
            if coding in ("gzip", "x-gzip"):
                return zlib.decompress(body, 16 + zlib.MAX_WBITS)
            if coding == "deflate":
                try:
                    return zlib.decompress(body)
                except zlib.error:
                    return zlib.decompress(body, -zlib.MAX_WBITS)  # raw deflate, as some servers send it
        except zlib.error as error:
            raise HttpProtocolError(f"the {coding} body does not decode: {error}") from None
        raise HttpProtocolError(f"the reply's content coding {coding!r} was not offered")


class _Connection(asyncio.Protocol):
    """One kept-alive connection: one request at a time, its reply handed to a future."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._reader: _ReplyReader | None = None
        self._waiter: asyncio.Future[_ReplyReader] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, data: bytes, waiter: asyncio.Future[_ReplyReader]) -> None:
        """Write one request; `waiter` gets its reply, or the failure."""
        self._reader, self._waiter = _ReplyReader(), waiter
        self.transport.write(data)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        if self._reader is None:
            self._close()  # bytes nobody asked for: the connection's state is unknown
            return
        try:
            self._reader.feed(data)
        except HttpProtocolError as error:
            self._fail(error)
            return
        if self._reader.done:
            self._finish()

    def eof_received(self) -> bool | None:
        self.closed = True  # never handed out again
        return None  # close the transport: `connection_lost` follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._reader is None:
            return
        try:
            self._reader.end_of_stream()
        except HttpProtocolError as error:
            self._fail(ConnectionResetError(str(exc)) if exc else error)
            return
        self._finish()

    def close(self) -> None:
        """Close the connection (a request abandoned mid-way leaves it in an unknown state)."""
        self._close()

    def _finish(self) -> None:
        reader, waiter = self._reader, self._waiter
        self._reader = self._waiter = None
        if not reader.keep_alive or reader.buffer:  # type: ignore[union-attr]
            self._close()  # bytes past the reply: the connection's state is unknown
        if waiter is not None and not waiter.done():
            waiter.set_result(reader)  # type: ignore[arg-type]

    def _fail(self, error: Exception) -> None:
        waiter = self._waiter
        self._reader = self._waiter = None
        self._close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class EndpointConnections:
    """Kept-alive connections to one endpoint (opened on first use; idle ones reused, the most
    recent first). Bound to the event loop it is first used in."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity  # requests in flight the caller allows (kept for inspection)
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._targets: dict[str, tuple[_Origin, str]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def post(self, url: str, body: dict[str, Any], headers: Mapping[str, str]) -> Reply:
        """POST `body` as JSON and read the whole reply. Raises `OSError` (connection failures,
        TLS included) or `HttpProtocolError`; a cancelled request closes its connection."""
        origin, target = self._target(url)
        payload = json.dumps(body).encode()
        data = request_head("POST", target, origin.host_header, headers, len(payload)) + payload
        connection = await self._connection(origin)
        self._busy.add(connection)
        try:
            waiter: asyncio.Future[_ReplyReader] = asyncio.get_running_loop().create_future()
            connection.send(data, waiter)
            reader = await waiter
        except BaseException:
            connection.close()
            raise
        finally:
            self._busy.discard(connection)
        if not connection.closed:
            self._idle.setdefault(origin, []).append(connection)
        return Reply(reader.status, reader.headers, reader.decoded_body())

    def _target(self, url: str) -> tuple[_Origin, str]:
        found = self._targets.get(url)
        if found is None:
            found = self._targets[url] = _origin_and_target(url)
        return found

    async def _connection(self, origin: _Origin) -> _Connection:
        idle = self._idle.get(origin, ())
        while idle:
            connection = idle.pop()  # type: ignore[union-attr]
            if not connection.closed:
                return connection
        ssl_context = None
        if origin.tls:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ssl_context = self._ssl
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(_Connection, origin.host, origin.port, ssl=ssl_context,
                                                     server_hostname=origin.host if origin.tls else None)
        return connection

    async def aclose(self) -> None:
        """Close every connection."""
        for connection in [*(c for idle in self._idle.values() for c in idle), *self._busy]:
            connection.close()
        self._idle.clear()
        self._busy.clear()
