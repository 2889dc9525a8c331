"""The hosts' HTTP/1.1 connections (`forge_core.hosts.http_connections`) against a raw socket
server: the exact bytes sent, kept-alive reuse, every reply framing, and closed connections."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Awaitable, Callable

import pytest

from forge_core.hosts.http_connections import EndpointConnections, HttpProtocolError

BODY = {"model": "m", "messages": [{"role": "user", "content": "Capitale de la France ? \u00e9\u4e2d"}],
        "max_tokens": 8}
ANSWER = b'{"ok": true}'


def reply(body: bytes = ANSWER, *headers: str, status: str = "200 OK", version: str = "HTTP/1.1") -> bytes:
    head = [f"{version} {status}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def with_length(body: bytes = ANSWER, *headers: str) -> bytes:
    return reply(body, f"Content-Length: {len(body)}", *headers)


class Closing(bytes):
    """A scripted reply after which the server closes the connection."""


class RawServer:
    """Answers each request read from a connection with the next scripted reply (a `Closing`
    reply closes the connection after it); records what arrived and counts connections."""

    def __init__(self, replies: list[bytes]) -> None:
        self.replies = replies
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None
        self.url = ""

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                self.requests.append(head + await reader.readexactly(length))
                answer = self.replies[len(self.requests) - 1]
                writer.write(answer)
                await writer.drain()
                if isinstance(answer, Closing):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def run(replies: list[bytes], calls: Callable[[EndpointConnections, str], Awaitable[object]]):
    """(what `calls` returned, the server) against a server scripted with `replies`."""
    async def go():
        async with RawServer(replies) as server:
            connections = EndpointConnections(4)
            try:
                async with asyncio.timeout(10):  # a bug that loses a reply fails here rather than hanging
                    return await calls(connections, server.url), server
            finally:
                await connections.aclose()
    return asyncio.run(go())


def test_the_body_is_json_dumps_byte_for_byte_with_the_callers_headers() -> None:
    (answer, server) = run([with_length()], lambda c, url: c.post(url, BODY, {"Authorization": "Bearer k"}))
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert body == json.dumps(BODY).encode()  # what aiohttp's json= sent: ", " and ": ", \u escapes
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    assert {"Content-Type: application/json", "Authorization: Bearer k", f"Content-Length: {len(body)}",
            f"Host: {server.url.split('/')[2]}"} <= set(lines)
    assert (answer.status, answer.body) == (200, ANSWER)


def test_a_kept_alive_connection_serves_the_next_request() -> None:
    async def three(connections: EndpointConnections, url: str):
        return [await connections.post(url, BODY, {}) for _ in range(3)]
    answers, server = run([with_length()] * 3, three)
    assert [a.body for a in answers] == [ANSWER] * 3
    assert server.connections == 1


def test_connection_close_is_honoured_and_the_next_request_opens_another() -> None:
    async def two(connections: EndpointConnections, url: str):
        return [await connections.post(url, BODY, {}) for _ in range(2)]
    answers, server = run([with_length(ANSWER, "Connection: close")] * 2, two)
    assert [a.body for a in answers] == [ANSWER] * 2
    assert server.connections == 2


@pytest.mark.parametrize("answer", [
    reply(b"5\r\n{\"ok\"\r\n7;ext=1\r\n: true}\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    reply(b"5\r\n{\"ok\"\r\n7\r\n: true}\r\n0\r\nX-Trailer: 1\r\n\r\n", "Transfer-Encoding: chunked"),
    with_length(gzip.compress(ANSWER), "Content-Encoding: gzip"),
    b"HTTP/1.1 100 Continue\r\n\r\n" + with_length(),
], ids=["chunked", "chunked-with-trailer", "gzip", "after-100-continue"])
def test_every_reply_framing_gives_the_same_body_and_keeps_the_connection(answer: bytes) -> None:
    async def two(connections: EndpointConnections, url: str):
        return [await connections.post(url, BODY, {}) for _ in range(2)]
    answers, server = run([answer, with_length()], two)
    assert [a.body for a in answers] == [ANSWER, ANSWER]
    assert server.connections == 1  # the framing was read to its end: the connection was reusable


def test_a_reply_without_length_runs_to_the_close() -> None:
    answer, _ = run([Closing(reply(ANSWER, version="HTTP/1.0"))], lambda c, url: c.post(url, BODY, {}))
    assert answer.body == ANSWER


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def two(connections: EndpointConnections, url: str):
        first = await connections.post(url, BODY, {})
        await asyncio.sleep(0.05)  # the server's close reaches the idle connection
        return first, await connections.post(url, BODY, {})
    (first, second), server = run([Closing(with_length()), with_length()], two)
    assert (first.body, second.body) == (ANSWER, ANSWER)
    assert server.connections == 2


def test_a_reply_cut_short_fails_as_a_protocol_error() -> None:
    with pytest.raises(HttpProtocolError):
        run([Closing(with_length()[:-3])], lambda c, url: c.post(url, BODY, {}))


def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    with pytest.raises(ValueError, match="line break"):
        run([with_length()], lambda c, url: c.post(url, BODY, {"Authorization": "Bearer k\r\nX-Evil: 1"}))
