"""Compare the two llama.cpp runtimes on FORGE's own prompts, end to end through our client.

Starts llama-cpp-python's server and xllamacpp's server on the same GGUF (one after the other,
each alone on the CPU), sends the same arm prompts of real test questions through
`OpenAICompatibleHost`, and prints as its last line a JSON object with seconds per call for each
runtime and the ratio. Run: `.venv/bin/python bench/host_runtime.py [--model smollm2-135m]
[--queries 6]` (xllamacpp comes with `pip install -e .[bench]`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

import httpx

from forge_core import config
from forge_core.arms import alphabet
from forge_core.evidence.answering import answer_with_arm, load_retriever, retrieve_evidence
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer, _free_port
from forge_core.hosts.models import model_path
from forge_core.hosts.openai_compat import OpenAICompatibleHost
from forge_core.store import Store

XLLAMACPP_LAUNCHER = """
import sys, time, xllamacpp
params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.port = int(sys.argv[2])
params.n_parallel = 1
params.n_ctx = 8192
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = 2
server = xllamacpp.Server(params)
while True:
    time.sleep(3600)
"""


def wait_healthy(base_url: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server at {base_url} did not start")


async def time_calls(base_url: str, model: str, questions: list, store: Store) -> dict:
    config = HostConfig(name="bench", kind="openai", model=model, base_url=base_url, max_concurrency=1, timeout_s=600)
    calls, tokens_in, tokens_out = 0, 0, 0
    started = time.perf_counter()
    async with OpenAICompatibleHost(config) as client:
        for benchmark, question in questions:
            evidence = retrieve_evidence(load_retriever(store, benchmark), question)
            for arm in alphabet(6):  # prefix-aware order, as enumeration runs them
                answer = await answer_with_arm(client, evidence, arm, benchmark == "fever")
                calls += 1
                tokens_in += answer.tokens_in
                tokens_out += answer.tokens_out
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "calls": calls, "seconds_per_call": round(seconds / calls, 3),
            "tokens_in": tokens_in, "tokens_out": tokens_out}


def run_llama_cpp_python(model_key: str, questions: list, store: Store) -> dict:
    with EmbeddedServer(model_key) as server:
        return asyncio.run(time_calls(server.info.base_url, model_key, questions, store))


def run_xllamacpp(model_key: str, questions: list, store: Store) -> dict:
    port = _free_port()
    command = [sys.executable, "-c", XLLAMACPP_LAUNCHER, str(model_path(model_key, config.models_dir())), str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        wait_healthy(base_url)
        return asyncio.run(time_calls(base_url, model_key, questions, store))
    finally:
        process.terminate()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--queries", type=int, default=5)
    args = parser.parse_args()
    store = Store(config.store_path())
    questions = []
    for benchmark in ("hotpotqa", "popqa", "musique", "2wikimultihopqa", "fever"):
        ids = store.split_ids(benchmark, "dev")[: max(1, args.queries // 5)]
        questions += [(benchmark, e.question) for e in store.examples(benchmark, ids)]
    questions = questions[: args.queries]
    if not questions:
        sys.exit("no questions: run `forge data import` first")
    llama_cpp_python = run_llama_cpp_python(args.model, questions, store)
    xllamacpp = run_xllamacpp(args.model, questions, store)
    print(json.dumps({
        "model": args.model, "queries": len(questions), "arms": 6,
        "llama_cpp_python": llama_cpp_python, "xllamacpp": xllamacpp,
        "xllamacpp_over_llama_cpp_python_time": round(xllamacpp["seconds"] / llama_cpp_python["seconds"], 3),
    }))


if __name__ == "__main__":
    main()
