"""How reproducible are the embedded host's stored outcomes? Rerun a sample of them and compare.

1. Against the store: `--n` stored (query, arm) outcomes of a host (the same number of each arm
   of the 6-arm alphabet, error rows excluded), shuffled with `--seed` so the calls run in an
   order unlike the enumeration's (where a query's arms run back to back), are rerun through the
   enumeration's own path (retrieve, build the arm's prompt, call, extract, score) on a freshly
   started default server. Counted: reruns whose answer text, F1 and token counts all equal the
   stored ones.
2. Against itself: the same calls once more in another order on the same server. llama.cpp
   reuses the longest prompt prefix it still holds from the previous request, and how much was
   reused changes how the rest of the prompt is split into batches and so, slightly, the
   arithmetic: a greedy near-tie can flip. Counted: calls whose two answers agree.
3. With `--ubatch-n K`, a server that evaluates prompts one token at a time (`--n_ubatch 1`)
   runs the first K calls of the sample in both orders: the same arithmetic at every position
   whatever was reused, at the price of slower prompt processing. Reported: its agreement
   between the two orders and its seconds per call against the default server's on the same K
   calls (both measured in this run).

Prints one JSON line last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, replace

import numpy as np

from forge_core import config
from forge_core.arms import alphabet, parse_arm
from forge_core.evidence.answering import answer_with_arm, load_retriever, retrieve_evidence, score_arm_answer
from forge_core.hosts.base import HostConfig
from forge_core.hosts.embedded import EmbeddedServer
from forge_core.hosts.lifetime import hosted
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.store import Store

UBATCH_1 = ("--n_ubatch", "1")


@dataclass(frozen=True)
class Rerun:
    """One call made again: what came back, and how long it took."""

    key: tuple[str, str, str]  # benchmark, example_id, arm
    answer: str
    f1: float
    tokens: tuple[int, int]
    seconds: float


def sample_outcomes(store: Store, host: str, n: int, seed: int) -> list[dict]:
    """`n` stored non-error outcomes (rounded up to a multiple of 6), an equal share of each of
    the 6 arms, in shuffled order."""
    outcomes = store.arm_outcomes(host)
    outcomes = outcomes[outcomes["error"].isna()]
    rng = np.random.default_rng(seed)
    chosen = []
    for arm in alphabet(6):
        rows = outcomes[outcomes["arm"] == arm.name]
        chosen += rows.iloc[rng.choice(len(rows), size=-(-n // 6), replace=False)].to_dict("records")
    return [chosen[i] for i in rng.permutation(len(chosen))]


async def rerun_all(store: Store, served: HostConfig, rows: list[dict], label: str) -> dict[tuple, Rerun]:
    """Every row's call made again, in the rows' order, on one served host."""
    reruns = {}
    async with hosted(served) as client:
        for number, row in enumerate(rows, start=1):
            example = store.examples(row["benchmark"], [row["example_id"]])[0]
            evidence = retrieve_evidence(load_retriever(store, row["benchmark"]), example.question)
            started = time.perf_counter()
            answer = await answer_with_arm(client, evidence, parse_arm(row["arm"]), example.is_fever)
            seconds = time.perf_counter() - started
            f1, _ = score_arm_answer(answer, example.answers, example.is_fever)
            key = (row["benchmark"], row["example_id"], row["arm"])
            reruns[key] = Rerun(key, answer.answer, f1, (answer.tokens_in, answer.tokens_out), seconds)
            print(f"{label} {number}/{len(rows)}", file=sys.stderr)
    return reruns


def run_on_server(store: Store, host_config: HostConfig, orders: list[list[dict]],
                  server_args: tuple[str, ...]) -> list[dict]:
    """Each order of calls, one after another, on one new server started with `server_args`."""
    with EmbeddedServer(host_config.model, server_args=server_args) as server:
        served = replace(host_config, base_url=server.info.base_url)
        return [asyncio.run(rerun_all(store, served, rows, f"{' '.join(server_args) or 'default'} order {i + 1}"))
                for i, rows in enumerate(orders)]


def identical(a: Rerun, b: Rerun) -> bool:
    """Same answer text, F1 and token counts."""
    return (a.answer, a.f1, a.tokens) == (b.answer, b.f1, b.tokens)


def against_store(stored: list[dict], reruns: dict[tuple, Rerun]) -> dict:
    """Shares of reruns equal to the stored outcomes, overall and per arm."""
    def same(row: dict) -> dict[str, bool]:
        rerun = reruns[(row["benchmark"], row["example_id"], row["arm"])]
        return {"answer": rerun.answer == row["answer"], "f1": rerun.f1 == row["f1"],
                "tokens": rerun.tokens == (row["tokens_in"], row["tokens_out"])}

    checks = [(row["arm"], same(row)) for row in stored]

    def shares(rows: list[dict[str, bool]]) -> dict:
        return {"calls": len(rows), "identical": _share([all(r.values()) for r in rows]),
                **{field: _share([r[field] for r in rows]) for field in ("answer", "f1", "tokens")}}

    return {**shares([c for _, c in checks]),
            "by_arm": {arm.name: shares([c for a, c in checks if a == arm.name]) for arm in alphabet(6)}}


def _share(flags: list[bool]) -> float:
    return round(float(np.mean(flags)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="embedded",
                        choices=[n for n, c in BUILTIN_HOSTS.items() if c.kind == "embedded"])
    parser.add_argument("--n", type=int, default=60, help="outcomes to rerun (rounded up to a multiple of 6)")
    parser.add_argument("--ubatch-n", type=int, default=0, help="calls to run on a one-token-batch server too")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    load_before = os.getloadavg()  # a loaded machine's seconds per call say so
    store = Store(config.store_path())
    host_config = BUILTIN_HOSTS[args.host]
    stored = sample_outcomes(store, args.host, args.n, args.seed)
    other_order = stored[::-1]
    first, second = run_on_server(store, host_config, [stored, other_order], ())
    report = {
        "bench": "reproducibility", "host": args.host, "store": str(store.path), "seed": args.seed,
        "against_store": against_store(stored, first),
        "default_server": {"calls": len(stored),
                           "same_in_both_orders": _share([identical(first[k], second[k]) for k in first]),
                           "seconds_per_call": round(float(np.mean([r.seconds for r in first.values()])), 2)},
    }
    if args.ubatch_n:
        subset = stored[: args.ubatch_n]
        one, two = run_on_server(store, host_config, [subset, subset[::-1]], UBATCH_1)
        default_seconds = float(np.mean([first[k].seconds for k in one]))
        ubatch_seconds = float(np.mean([r.seconds for r in one.values()]))
        report["ubatch_1_server"] = {
            "calls": len(subset), "same_in_both_orders": _share([identical(one[k], two[k]) for k in one]),
            "same_as_default_server": _share([identical(one[k], first[k]) for k in one]),
            "seconds_per_call": round(ubatch_seconds, 2),
            "seconds_ratio_to_default": round(ubatch_seconds / default_seconds, 2)}
    report["load_average_before"], report["load_average_after"] = load_before, os.getloadavg()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
