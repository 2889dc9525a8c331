"""A user's own retrieval service over HTTP.

Protocol: `POST {url}` with the JSON body `{"query": "...", "k": 5}`; the reply is a JSON list of
`{"title": "...", "text": "...", "score": 1.0}`, best first (`title` and `score` may be left out:
"" and 0.0). The key, if any, is read from the environment variable the configuration names and
sent as `Authorization: Bearer <key>`; it is never stored or shown.

Retried, with a short exponential backoff: timeouts, connection errors, HTTP 429 and 5xx, and a
reply that is not that list. Any other HTTP status fails at once. Every failure reaches the caller
as a one-line `RetrieverError` naming the retriever, the URL and the reason.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import httpx

from forge_core.errors import ForgeError
from forge_core.evidence.retrieval import ScoredDocument
from forge_core.evidence.retrievers import RetrieverConfig
from forge_core.records import Document

log = logging.getLogger(__name__)

BACKOFF_S = 0.2  # the first wait between attempts; doubled after each
MAX_REASON_CHARS = 200


class RetrieverError(ForgeError):
    """A retrieval that failed for good (after retries), said in one line."""


class _Retryable(Exception):
    """One failed attempt worth retrying."""


class HttpRetriever:
    """A retrieval service speaking FORGE's protocol; its passages are labelled with `benchmark`."""

    documents: tuple[Document, ...] = ()  # the corpus lives in the service

    def __init__(self, config: RetrieverConfig, benchmark: str) -> None:
        """Read the key from the environment now, so a missing one fails before any question."""
        self.config = config
        self.benchmark = benchmark
        self.settings = config.settings
        headers = {"Content-Type": "application/json"}
        if config.api_key_env:
            key = os.environ.get(config.api_key_env, "")
            if not key:
                raise RetrieverError(f"retriever '{config.name}': environment variable {config.api_key_env} "
                                     "is not set (it should hold the service's key)")
            headers["Authorization"] = f"Bearer {key}"
        self.client = httpx.Client(timeout=config.timeout_s, headers=headers)

    def retrieve(self, query: str, k: int = 5) -> list[ScoredDocument]:
        """The service's top-k passages for the query (at most k are kept), best first."""
        attempts = self.config.retries + 1
        reason = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            try:
                return self._attempt(query, k)
            except _Retryable as failure:
                reason = str(failure)
                log.info("retriever %s attempt %d failed: %s", self.config.name, attempt + 1, reason)
        raise RetrieverError(f"retriever '{self.config.name}': {self.config.url}: {reason} "
                             f"(after {attempts} attempt{'s' if attempts > 1 else ''})")

    def _attempt(self, query: str, k: int) -> list[ScoredDocument]:
        try:
            response = self.client.post(self.config.url, json={"query": query, "k": k})
        except httpx.TimeoutException:
            raise _Retryable(f"no reply within {self.config.timeout_s:g} s") from None
        except httpx.HTTPError as error:
            raise _Retryable(type(error).__name__) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}")
        if response.status_code >= 400:
            raise RetrieverError(f"retriever '{self.config.name}': {self.config.url}: HTTP {response.status_code} "
                                 f"{response.text[:MAX_REASON_CHARS].strip()}".strip())
        try:
            body = response.json()
        except ValueError:
            raise _Retryable("the reply is not JSON") from None
        return [ScoredDocument(document, score) for document, score in self._parse(body)][:k]

    def _parse(self, body: Any) -> list[tuple[Document, float]]:
        """(passage, score) pairs of a reply, or `_Retryable` naming what is wrong with it."""
        if not isinstance(body, list):
            raise _Retryable('the reply is not a JSON list of {"title", "text", "score"}')
        found = []
        for position, item in enumerate(body):
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                raise _Retryable(f"passage {position} of the reply has no \"text\" string")
            title = item.get("title", "")
            score = item.get("score", 0.0)
            if not isinstance(title, str) or isinstance(score, bool) or not isinstance(score, (int, float)):
                raise _Retryable(f"passage {position} of the reply has a non-string title or a non-numeric score")
            found.append((Document(self.benchmark, title, item["text"]), float(score)))
        return found
