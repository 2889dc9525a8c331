"""A test double: an OpenAI-compatible chat-completions server that fails on purpose.

Each request draws one behaviour from `FAULTS` with a seeded generator (a fixed mix, drawn in
arrival order): a good answer, or one of the faults a remote host shows in real life. It speaks
raw HTTP/1.1 over asyncio streams so it can also misbehave below HTTP: reset a connection in the
middle of a body, send a truncated body, hang past the client's timeout, or go away for a while
(stop listening and drop every open connection) and come back on the same port.

Good answers are `answer <hash of the request>` with usage counted from the prompt; every faulty
200 body says FAULTY in its text where it has one, so a test can tell that no stored outcome came
from a failed call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections import Counter
from typing import Any

# (behaviour, weight): about 70% good answers, the rest spread over the faults.
FAULTS: tuple[tuple[str, float], ...] = (
    ("ok", 70.0),
    ("ok_wrong_content_type", 2.0),  # valid JSON served as text/plain: still a good answer
    ("429_retry_after", 2.0),
    ("429", 2.0),
    ("500", 2.0),
    ("502", 2.0),
    ("503", 2.0),
    ("read_timeout", 2.0),
    ("reset_mid_body", 3.0),
    ("truncated_json", 3.0),
    ("not_json", 3.0),
    ("no_usage", 2.0),
    ("empty_choices", 3.0),
    ("away_and_back", 0.2),
)
RETRY_AFTER_S = 0.3  # what the 429 with Retry-After asks for
HANG_S = 3.0  # longer than the tests' client timeout
AWAY_S = 0.4  # how long the server stays away


def good_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The correct chat completion for a request: deterministic text and usage."""
    prompt = json.dumps(body.get("messages")) + str(body.get("seed")) + str(body.get("temperature"))
    key = hashlib.sha1(prompt.encode()).hexdigest()[:10]
    usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 2, "total_tokens": len(prompt) // 4 + 2}
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"answer {key}"}}], "usage": usage}


def _response(status: int, payload: bytes, content_type: str = "application/json",
              extra: str = "", length: int | None = None) -> bytes:
    reason = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
              503: "Service Unavailable"}[status]
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(payload) if length is None else length}\r\n{extra}\r\n")
    return head.encode() + payload


class FaultServer:
    """Serves on 127.0.0.1 from a thread of its own; `counts` says what it did per behaviour and
    `good_answers` holds every answer text it served with status 200 and a usable body."""

    def __init__(self, seed: int = 0, faults: tuple[tuple[str, float], ...] = FAULTS) -> None:
        self.random = random.Random(seed)
        self.names = [name for name, _ in faults]
        self.weights = [weight for _, weight in faults]
        self.counts: Counter[str] = Counter()
        self.retry_after_gaps: list[float] = []  # seconds between a Retry-After 429 and the retry
        self.good_answers: set[str] = set()
        self._last_429: dict[str, float] = {}
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._go_away(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def set_faults(self, faults: tuple[tuple[str, float], ...]) -> None:
        """Change the mix from now on (e.g. no faults for a second run)."""
        self.names = [name for name, _ in faults]
        self.weights = [weight for _, weight in faults]

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port or 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _go_away(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()

    async def _away_and_back(self) -> None:
        await self._go_away()
        await asyncio.sleep(AWAY_S)
        await self._listen()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                body = await _read_request(reader)
                if body is None:
                    return
                if not await self._answer(body, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        """Reply with the next behaviour; False when the connection is closed after it."""
        behaviour = self.random.choices(self.names, self.weights)[0]
        self.counts[behaviour] += 1
        key = json.dumps(body, sort_keys=True)
        loop_time = self._loop.time()
        if key in self._last_429:
            self.retry_after_gaps.append(loop_time - self._last_429.pop(key))
        if behaviour == "away_and_back":
            asyncio.ensure_future(self._away_and_back())
            return False
        if behaviour == "read_timeout":
            await asyncio.sleep(HANG_S)
            return False
        reply = good_reply(body)
        payload = json.dumps(reply).encode()
        if behaviour in ("ok", "ok_wrong_content_type"):
            self.good_answers.add(reply["choices"][0]["message"]["content"])
            content_type = "text/plain" if behaviour == "ok_wrong_content_type" else "application/json"
            writer.write(_response(200, payload, content_type))
        elif behaviour == "429_retry_after":
            self._last_429[key] = loop_time
            writer.write(_response(429, b'{"error": {"message": "slow down"}}',
                                   extra=f"Retry-After: {RETRY_AFTER_S}\r\n"))
        elif behaviour in ("429", "500", "502", "503"):
            writer.write(_response(int(behaviour), b'{"error": {"message": "scripted failure"}}'))
        elif behaviour == "reset_mid_body":
            writer.write(_response(200, payload[: len(payload) // 2], length=len(payload)))
            await writer.drain()
            writer.transport.abort()
            return False
        elif behaviour == "truncated_json":
            writer.write(_response(200, payload[: len(payload) // 2]))
        elif behaviour == "not_json":
            writer.write(_response(200, b"<html><body>FAULTY gateway page</body></html>", "text/html"))
        elif behaviour == "no_usage":
            faulty = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "FAULTY no usage"}}]}
            writer.write(_response(200, json.dumps(faulty).encode()))
        elif behaviour == "empty_choices":
            writer.write(_response(200, json.dumps({"choices": [], "usage": reply["usage"]}).encode()))
        await writer.drain()
        return True


async def _read_request(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """One HTTP request's JSON body, or None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(await reader.readexactly(length))
