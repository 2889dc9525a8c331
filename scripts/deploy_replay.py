"""Issue #38's deployment check, as the bar runs it: a replay of demo questions (the mix of benchmarks
shifting half-way) through the official `openai` client against `forge serve --budget-tokens T`,
whose host is the counting test double of tests/support/counting_host.py (a local OpenAI-compatible
server, a test double: never a product host).

Steps (each its own subcommand, so a person can watch the Traffic page while `replay` runs):

    python scripts/deploy_replay.py host --port 8199            # the counting double, until Ctrl-C
    forge host add counting --base-url http://127.0.0.1:8199/v1 --model counting
    forge serve --host counting --router CKPT --benchmark musique --benchmark 2wikimultihopqa \\
        --benchmark popqa --port 8100   # no budget yet; evidence from the three corpora's union
    python scripts/deploy_replay.py target --url http://127.0.0.1:8100   # T: halfway Direct..Raw
    forge serve --host counting --router CKPT --benchmark ... --port 8100 --budget-tokens T \\
        --shadow-raw 0.1 --candidate CKPT2 --shadow-rate 0.2 --shadow-max-tokens 3000
    python scripts/deploy_replay.py replay --url http://127.0.0.1:8100 --target T
    forge traffic --json

`all` does every step itself (the double in this process, `forge serve` as a subprocess on
FORGE_STORE, which gets the host `counting`). `replay` prints progress every 100 requests and one
JSON line last: the target, the realized mean tokens a request over the last 500 (after the
shift) and its distance to T, the refused requests, and the traffic log's records per request.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import openai

from forge_core import config
from forge_core.store import Store
from forge_core.traffic_log import default_traffic_dir, read_traffic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.counting_host import SHIFTED_MIX, CountingHost, replay_questions  # the test double  # noqa: E402

HOST = "counting"
CLIENT = "replay"  # the X-Forge-Client of the replay's requests
ARMS = ("direct:no_think", "raw:no_think")  # the target lies halfway between their costs


def arm_cost(url: str, questions: list[str], arm: str) -> float:
    """Mean tokens a request of a fixed arm over `questions` (each distinct question asked once)."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", default_headers={"X-Forge-Client": "target"})
    cost = {}
    for question in dict.fromkeys(questions):
        reply = client.chat.completions.create(model=f"forge-arm-{arm}",
                                               messages=[{"role": "user", "content": question}])
        cost[question] = reply.usage.total_tokens
    return float(np.mean([cost[q] for q in questions]))


def target(url: str, questions: list[str]) -> dict:
    """Always-Direct's and Always-Raw's mean tokens over the replay, and the target halfway."""
    costs = {arm: arm_cost(url, questions, arm) for arm in ARMS}
    return {"direct_tokens": round(costs[ARMS[0]], 3), "raw_tokens": round(costs[ARMS[1]], 3),
            "target": round(sum(costs.values()) / 2, 3)}


def replay(url: str, questions: list[str], budget: float, traffic_dir: Path) -> dict:
    """Send every question as model `forge`; tokens, refusals and the log's records per request."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="replay-key", max_retries=0,
                           default_headers={"X-Forge-Client": CLIENT})
    started = time.time()
    tokens, arms, refused = [], [], 0
    for number, question in enumerate(questions, start=1):
        try:
            reply = client.chat.completions.create(model="forge", messages=[{"role": "user", "content": question}])
        except openai.APIError as error:
            refused += 1
            print(f"request {number} refused: {error}", file=sys.stderr)
            continue
        tokens.append(reply.usage.total_tokens)
        arms.append(reply.model_extra["forge"]["arm"])
        if number % 100 == 0:
            print(f"{number}/{len(questions)}: mean tokens of the last 100 {np.mean(tokens[-100:]):.1f} "
                  f"(target {budget:g})", file=sys.stderr, flush=True)
    time.sleep(1.5)  # the log's fsync interval, and the last shadow work
    logged = [r for r in read_traffic(traffic_dir, started - 1).requests
              if r.get("client") == CLIENT and r.get("endpoint") == "chat"]
    half = len(tokens) // 2
    after_shift = float(np.mean(tokens[half:]))
    return {"requests": len(questions), "answered": len(tokens), "refused": refused, "target": budget,
            "realized_mean_last_half": round(after_shift, 3),
            "relative_error_last_half": round((after_shift - budget) / budget, 4),
            "realized_mean_first_half": round(float(np.mean(tokens[:half])), 3),
            "arms_first_half": _counts(arms[:half]), "arms_last_half": _counts(arms[half:]),
            "log_records": len(logged), "log_records_per_request": round(len(logged) / len(questions), 4),
            "distinct_logged_ids": len({r["id"] for r in logged}), "seconds": round(time.time() - started, 1)}


def _counts(arms: list[str]) -> dict[str, int]:
    return dict(sorted({arm: arms.count(arm) for arm in set(arms)}.items()))


def serve(port: int, router: str, benchmarks: list[str], extra: list[str]) -> subprocess.Popen:
    """`forge serve` on the counting host as a subprocess (retrieving from the union of the
    benchmarks' corpora), once /health says ok."""
    corpus = [option for name in benchmarks for option in ("--benchmark", name)]
    command = [sys.executable, "-m", "forge_core.cli", "serve", "--host", HOST, "--router", router, *corpus,
               "--port", str(port), *extra]
    print("$ forge " + " ".join(command[3:]), file=sys.stderr, flush=True)
    server = subprocess.Popen(command)
    deadline = time.monotonic() + 600
    while _health(f"http://127.0.0.1:{port}") != "ok":
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit(f"forge serve did not come up on port {port}")
        time.sleep(0.5)
    return server


def _health(url: str) -> str | None:
    try:
        return httpx.get(f"{url}/health", timeout=5).json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def run_all(args: argparse.Namespace, questions: list[str]) -> None:
    """Every step: the double, the target, the budgeted server, the replay, `forge traffic --json`."""
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config

    url = f"http://127.0.0.1:{args.port}"
    with CountingHost() as double:
        save_host_config(Store(config.store_path()), HostConfig(name=HOST, kind="openai", model="counting",
                                                               base_url=double.base_url, max_retries=0))
        if args.target is None:
            plain = serve(args.port, args.router, args.benchmark or list(SHIFTED_MIX), [])
            try:
                measured = target(url, questions)
            finally:
                plain.terminate()
                plain.wait(timeout=60)
            print(json.dumps(measured), flush=True)
        else:
            measured = {"target": args.target}
        shadow = ["--shadow-raw", "0.1"] + (["--candidate", args.candidate, "--shadow-rate", "0.2",
                                             "--shadow-max-tokens", "3000"] if args.candidate else [])
        budgeted = serve(args.port, args.router, args.benchmark or list(SHIFTED_MIX),
                         ["--budget-tokens", str(measured["target"]), *shadow])
        try:
            result = replay(url, questions, measured["target"], default_traffic_dir())
            print(json.dumps(result), flush=True)
            if args.out:  # what the docs quote (data/demo/reports/deploy_replay_*.json)
                corpus = args.benchmark or list(SHIFTED_MIX)
                args.out.write_text(json.dumps({"router": args.router, "corpus": corpus, **measured, **result},
                                               indent=1) + "\n")
        finally:
            budgeted.terminate()
            budgeted.wait(timeout=60)
    subprocess.run([sys.executable, "-m", "forge_core.cli", "traffic", "--json"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("host", "target", "replay", "all"))
    parser.add_argument("--url", default="http://127.0.0.1:8100", help="a running `forge serve` (target, replay)")
    parser.add_argument("--port", type=int, default=8100, help="host: the double's port; all: the server's")
    parser.add_argument("--target", type=float, help="replay: the server's --budget-tokens; all: skip measuring it")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--traffic-dir", type=Path, default=None, help="replay: the server's traffic log")
    parser.add_argument("--router", help="all: a cost-conditioned checkpoint")
    parser.add_argument("--out", type=Path, help="all: also write the target and the replay's result there (JSON)")
    parser.add_argument("--candidate", help="all: a checkpoint shadowing 20%% of the requests")
    parser.add_argument("--benchmark", action="append", help="all: whose corpus the server retrieves from "
                        "(repeatable: the union; default: every benchmark the replay asks from)")
    args = parser.parse_args()
    if args.step == "host":
        with CountingHost(port=args.port) as double:
            print(f"counting test double on {double.base_url} (Ctrl-C to stop)", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
        return
    questions = replay_questions(Store(config.store_path()), args.requests, args.seed)
    if args.step == "target":
        print(json.dumps(target(args.url, questions)))
    elif args.step == "replay":
        if args.target is None:
            parser.error("replay needs --target (the server's --budget-tokens)")
        print(json.dumps(replay(args.url, questions, args.target, args.traffic_dir or default_traffic_dir())))
    else:
        if args.router is None:
            parser.error("all needs --router (a cost-conditioned checkpoint)")
        run_all(args, questions)


if __name__ == "__main__":
    main()
