"""What counting reasoning text with the host's own tokenizer costs (`forge_core.hosts.reasoning_tokens`).

Serves an embedded model (default the tiny SmolLM2-135M; it must be pulled) with llama-cpp-python,
then asks its tokenize endpoint the way an OpenAI-compatible host client does: the first count
finds the endpoint (llama-server's and vLLM's `/tokenize` answer 404 here, llama-cpp-python's
`/extras/tokenize/count` answers), each later count is one request. The text is a reasoning-like
paragraph of about `--words` words. Checks the count against the GGUF vocabulary's own.

Prints one JSON line: the endpoint found, the tokens counted, the vocabulary's count, the time of
the first count (discovery included) and the median of `--repeats` later counts, in milliseconds.
Run: `.venv/bin/python bench/reasoning_tokenize.py [--model smollm2-135m] [--words 990] [--repeats 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.http_retry import RetryingJsonClient, RetryPolicy
from forge_core.hosts.reasoning_tokens import ReasoningTokenizer
from forge_core.hosts.tokenizers import PromptTokenizer

SENTENCE = "Let me think about the capital of France, which is Paris."  # 11 words


async def _timed_counts(host: HostConfig, text: str, repeats: int) -> dict:
    roots = (host.base_url.removesuffix("/v1"),)
    tokenizer = ReasoningTokenizer(RetryingJsonClient(host, RetryPolicy(0), roots), host.model, lambda: ({}, None))
    try:
        started = time.perf_counter()
        counted = await tokenizer.count(text)
        first_ms = (time.perf_counter() - started) * 1000
        later = []
        for _ in range(repeats):
            started = time.perf_counter()
            await tokenizer.count(text)
            later.append((time.perf_counter() - started) * 1000)
    finally:
        await tokenizer.client.aclose()
    return {"endpoint": tokenizer.dialect.engine if tokenizer.dialect else None, "tokens": counted,
            "first_count_ms": round(first_ms, 1), "median_count_ms": round(statistics.median(later), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--words", type=int, default=990)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    text = " ".join([SENTENCE] * max(1, args.words // 11))
    with EmbeddedServer(args.model) as server:
        host = HostConfig(name="bench", kind="embedded", model=args.model, base_url=server.info.base_url)
        result = asyncio.run(_timed_counts(host, text, args.repeats))
    vocabulary_tokens = PromptTokenizer(args.model).count_text(text)
    print(json.dumps({"model": args.model, "words": len(text.split()), **result,
                      "vocabulary_tokens": vocabulary_tokens, "repeats": args.repeats}))


if __name__ == "__main__":
    main()
