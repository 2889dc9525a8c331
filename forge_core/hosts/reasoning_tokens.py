"""Reasoning tokens counted by the host's own tokenizer, where a provider's `usage` reports none.

Engines that return reasoning text without a reasoning-token count (vLLM, SGLang and llama.cpp
with a reasoning parser, or an inline `<think>` block) leave FORGE one way to an exact count: ask
the server to tokenize the text. Three tokenize endpoints are known, each at the server root:

- llama.cpp `llama-server`: `POST /tokenize {"content", "add_special": false}` -> `{"tokens": [...]}`
- vLLM: `POST /tokenize {"model", "prompt", "add_special_tokens": false}` -> `{"count", ...}`
- llama-cpp-python (FORGE's embedded runtime): `POST /extras/tokenize/count {"input"}` -> `{"count"}`

The first generation that needs a count finds which one the host answers, by tokenizing the empty
text with each in turn (what that answer counts is the special tokens the endpoint adds to any
text, subtracted from every count); after that, one tokenize call per generation that has
reasoning text and no usage count, none otherwise. A host that answers none (hosted APIs), or a
tokenize call that fails, leaves the word-piece estimate in place (`base.REASONING_ESTIMATED`);
a run of failures is logged once, and five in a row stop the asking.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from forge_core.hosts.base import REASONING_ESTIMATED, REASONING_FROM_TOKENIZER, Generation, HostError
from forge_core.hosts.http_retry import JsonPost, RetryingJsonClient, UnusableResponse

logger = logging.getLogger(__name__)

TOKENIZE_FAILURES_TO_GIVE_UP = 5  # failed counts in a row after which the endpoint is no longer asked


@dataclass(frozen=True)
class TokenizeDialect:
    """One engine's tokenize endpoint: its path under the server root, request and reply."""

    engine: str  # e.g. "llama-server"
    path: str  # under the server root, e.g. "/tokenize"
    body: Callable[[str, str], dict[str, Any]]  # (model, text) -> request body
    count: Callable[[Any], int]  # reply -> tokens (raises KeyError/TypeError/ValueError when not its reply)


TOKENIZE_DIALECTS: tuple[TokenizeDialect, ...] = (
    TokenizeDialect("llama-server", "/tokenize", lambda model, text: {"content": text, "add_special": False},
                    lambda reply: len(reply["tokens"])),
    TokenizeDialect("vllm", "/tokenize",
                    lambda model, text: {"model": model, "prompt": text, "add_special_tokens": False},
                    lambda reply: int(reply["count"])),
    TokenizeDialect("llama-cpp-python", "/extras/tokenize/count", lambda model, text: {"input": text, "model": model},
                    lambda reply: int(reply["count"])),
)


def _reader(dialect: TokenizeDialect) -> Callable[[Any], int]:
    def read(reply: Any) -> int:
        try:
            count = dialect.count(reply)
        except (KeyError, TypeError, ValueError):
            raise UnusableResponse(f"not a {dialect.engine} tokenize reply") from None
        if count < 0:
            raise UnusableResponse("a negative token count")
        return count
    return read


class ReasoningTokenizer:
    """Counts reasoning text with the tokenize endpoint a host answers (found on first use)."""

    def __init__(self, client: RetryingJsonClient, model: str,
                 auth: Callable[[], tuple[dict[str, str], str | None]]) -> None:
        self.client = client  # posts under the server root, without retries
        self.model = model
        self.auth = auth  # () -> (auth headers, the API key to scrub from errors), read per call
        self.dialect: TokenizeDialect | None = None  # None once probed: the host answers none
        self.offset = 0  # tokens the endpoint adds to any text (its count of the empty text)
        self.failures_in_a_row = 0
        self._probed = False
        self._probing = asyncio.Lock()

    async def count(self, text: str) -> int | None:
        """Tokens of `text` by the host's tokenizer; None when the host has no tokenize endpoint
        or the call failed."""
        async with self._probing:
            if not self._probed:
                await self._find_dialect()
        if self.dialect is None:
            return None
        try:
            count = max(0, await self._tokenize(self.dialect, text) - self.offset)
        except HostError as error:
            self._note_failure(error)
            return None
        self.failures_in_a_row = 0
        return count

    def _note_failure(self, error: HostError) -> None:
        """One warning for the first failure of a run of them, and none after; the endpoint is not
        asked again after `TOKENIZE_FAILURES_TO_GIVE_UP` failures in a row."""
        self.failures_in_a_row += 1
        if self.failures_in_a_row == 1:
            logger.warning("reasoning tokens estimated from word pieces until the tokenize endpoint answers: %s", error)
        if self.failures_in_a_row >= TOKENIZE_FAILURES_TO_GIVE_UP:
            logger.warning("the tokenize endpoint failed %d times in a row: reasoning tokens are estimated from "
                           "word pieces from now on", self.failures_in_a_row)
            self.dialect = None

    async def _find_dialect(self) -> None:
        for dialect in TOKENIZE_DIALECTS:
            try:
                self.offset = await self._tokenize(dialect, "")
            except HostError:
                continue
            self.dialect = dialect
            logger.info("reasoning tokens counted by the host's %s tokenize endpoint", dialect.engine)
            break
        self._probed = True

    async def _tokenize(self, dialect: TokenizeDialect, text: str) -> int:
        headers, secret = self.auth()
        post = JsonPost(dialect.path, dialect.body(self.model, text), headers, _reader(dialect), secret)
        count, _latency_ms, _attempts = await self.client.post(post)
        return count


async def counted_by_tokenizer(generation: Generation, reasoning_text: str,
                               tokenizer: ReasoningTokenizer) -> Generation:
    """The generation with its reasoning tokens counted by the host's tokenizer when they were
    estimated from word pieces and the host tokenizes (never above the output tokens); else unchanged."""
    if generation.reasoning_method != REASONING_ESTIMATED or not reasoning_text:
        return generation
    count = await tokenizer.count(reasoning_text)
    if count is None:
        return generation
    return replace(generation, tokens_reasoning=min(count, generation.tokens_out),
                   reasoning_method=REASONING_FROM_TOKENIZER)
