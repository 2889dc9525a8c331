"""Client throughput of Stage 0: how close `forge enumerate` comes to a fast host's own speed.

A test double stands in for the host: an OpenAI-compatible server (asyncio, in its own process)
that answers every chat-completions request after a fixed latency (default 200 ms), so a perfect
client at concurrency C makes C / latency calls a second. The script first checks that this
server alone sustains at least twice the highest rate asked of it (a raw asyncio load generator
in a third process, with 3x the connections), so the numbers measure FORGE, not the server.

Then it runs the real enumeration path (`forge_core.enumeration.runner.enumerate_on_host`: a
client from `hosts.registry.make_host`, BM25 retrieval, prompts, scoring and batched store writes)
on real imported train queries into a temporary store, at each concurrency in `--concurrency`:
`--calls` calls each (6 arms per query, no probes), except concurrency 1, which runs
`--calls-at-1` calls (at 200 ms a call, 3,000 calls would take 10 minutes and say nothing more).
With `--processes P` each level runs in min(P, concurrency) client processes sharing the plan
(`forge enumerate --processes`; `seconds` then spans every process's calls). With `--endpoints N`
(N > 1) it also compares one endpoint against N endpoints, each limited to `--per-endpoint`
requests in flight (default 16), at full load on each. That comparison is a client-side check:
the N endpoints are N ports of the one test-double process on this machine, so it shows that the
client spreads its calls over the endpoints and keeps each one's limit, not what N real hosts
would serve.

Prints one JSON line last: per concurrency, calls, seconds (first call started to last call
finished), calls per second, the ideal rate and the ratio to it, the client's CPU seconds (planning
and the retrievers' loading included), `cpu_ms_per_call`: the client's CPU milliseconds a call from
the first call to the last row written, summed over its processes (the figure a busy machine changes
least: at concurrency C one process keeps up with C / latency calls a second only while this stays
under latency / C of a core, 0.78 ms at 256 and 200 ms), and `server_cpu_ms_per_call`: the test
server's CPU over the same run, a call's share (it shares the machine's cores with the client);
with endpoints, both rates and their ratio; and `wall_s_process_start_to_last_row`, the wall time
from this process's start (interpreter, imports, server start and check, benchmark import) to
the last row of the last run written to the store.
Run: `.venv/bin/python bench/client_throughput.py [--latency 0.2] [--calls 3000] [--endpoints 4] [--processes 2]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from forge_core import config
from forge_core.data.importing import import_benchmarks
from forge_core.enumeration.planning import EnumerationPlan
from forge_core.enumeration.processes import enumerate_in_processes
from forge_core.enumeration.runner import enumerate_on_host
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import with_base_urls
from forge_core.records import BENCHMARKS
from forge_core.store import Store

ARMS = 6
SPAWN = multiprocessing.get_context("spawn")  # the server and checker processes start clean
ANSWER = json.dumps({
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "answer"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102},
}).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)
REQUEST_BODY = b'{"model": "m", "messages": [{"role": "user", "content": "q"}], "max_tokens": 8}'


def _complete_message_length(buffer: bytes) -> int:
    """Bytes of the first complete HTTP message in the buffer (headers and body), or 0."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return 0
    length = 0
    for line in buffer[:head_end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    total = head_end + 4 + length
    return total if len(buffer) >= total else 0


# ------------------------------------------------------------------ the test server (own process)

class _FixedLatencyServer(asyncio.Protocol):
    """Answers each request on a connection after `latency_s`, in order (keep-alive, pipelining)."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while length := _complete_message_length(self.buffer):
            self.buffer = self.buffer[length:]
            asyncio.get_running_loop().call_later(self.latency_s, self._respond)

    def _respond(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(RESPONSE)


@contextlib.contextmanager
def fixed_latency_server(latency_s: float, endpoints: int = 1) -> Iterator[tuple[list[int], int]]:
    """The test server in a process of its own until the block ends: (its ports, its pid)."""
    port_queue = SPAWN.Queue()
    server = SPAWN.Process(target=serve, args=(latency_s, endpoints, port_queue), daemon=True)
    server.start()
    try:
        yield port_queue.get(timeout=60), server.pid
    finally:
        server.terminate()
        server.join()


def serve(latency_s: float, endpoints: int, ports: multiprocessing.Queue) -> None:
    """Listen on `endpoints` free ports of 127.0.0.1 until terminated; puts the ports on the queue."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        servers = [await loop.create_server(lambda: _FixedLatencyServer(latency_s), "127.0.0.1", 0, backlog=4096)
                   for _ in range(endpoints)]
        ports.put([server.sockets[0].getsockname()[1] for server in servers])
        await asyncio.Event().wait()
    asyncio.run(main())


# ------------------------------------------------------------------ the server check (own process)

class _Caller(asyncio.Protocol):
    """One keep-alive connection sending requests back to back until `stop_at`."""

    def __init__(self, port: int, done: list[int], stop_at: float) -> None:
        self.request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode()
                        + b"\r\nContent-Type: application/json\r\nContent-Length: "
                        + str(len(REQUEST_BODY)).encode() + b"\r\n\r\n" + REQUEST_BODY)
        self.done, self.stop_at = done, stop_at
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while length := _complete_message_length(self.buffer):
            self.buffer = self.buffer[length:]
            self.done[0] += 1
            if time.monotonic() < self.stop_at:
                self.transport.write(self.request)


def load_server(ports: list[int], connections: int, seconds: float, result: multiprocessing.Queue) -> None:
    """Keep `connections` requests in flight over the ports for `seconds`; puts calls per second."""
    async def main() -> float:
        loop = asyncio.get_running_loop()
        done = [0]
        stop_at = time.monotonic() + 1.0 + seconds  # one second to open the connections and warm up
        for i in range(connections):
            port = ports[i % len(ports)]
            await loop.create_connection(lambda p=port: _Caller(p, done, stop_at), "127.0.0.1", port)
        await asyncio.sleep(max(0.0, stop_at - seconds - time.monotonic()))
        counted_from = done[0]
        await asyncio.sleep(seconds)
        return (done[0] - counted_from) / seconds
    result.put(asyncio.run(main()))


def check_server(context, ports: list[int], latency_s: float, concurrency: int) -> dict:
    """The server alone must sustain twice `concurrency / latency_s`; raises if it does not."""
    required = 2 * concurrency / latency_s
    result = context.Queue()
    checker = context.Process(target=load_server, args=(ports, 3 * concurrency, 3.0, result))
    checker.start()
    rate = result.get(timeout=120)
    checker.join()
    summary = {"connections": 3 * concurrency, "calls_per_s": round(rate, 1), "required": round(required, 1)}
    if rate < required:
        raise SystemExit(f"the test server is too slow for this benchmark: {summary}")
    return summary


# ------------------------------------------------------------------ the enumeration runs

def enumerate_level(store: Store, host_config: HostConfig, concurrency: int, calls: int, processes: int,
                    server_pid: int) -> dict:
    """One enumeration of `calls` calls (6 arms per query) at `concurrency` queries in flight, in
    `processes` client processes; the test server's CPU over the run, a call's share, beside the
    client's."""
    plan = EnumerationPlan(host=host_config.name, split="train", n_arms=ARMS, benchmarks=BENCHMARKS,
                           limit=max(1, calls // ARMS), concurrency=concurrency)
    cpu_started = _cpu_seconds()
    server_cpu_started = process_cpu_seconds(server_pid)
    if processes > 1:
        report = enumerate_in_processes(store, plan, host_config, processes)
    else:
        report = asyncio.run(enumerate_on_host(store, plan, host_config))
    server_cpu_s = process_cpu_seconds(server_pid) - server_cpu_started
    if report.errors:
        raise SystemExit(f"{len(report.errors)} calls failed, e.g. {report.errors[0]}")
    rate = report.calls / report.seconds
    return {"calls": report.calls, "seconds": round(report.seconds, 2), "calls_per_s": round(rate, 1),
            "cpu_s": round(_cpu_seconds() - cpu_started, 1),
            # every client process's CPU from its first call to its last row written, a call's share
            "cpu_ms_per_call": round(1000 * report.cpu_s / report.calls, 3),
            "server_cpu_ms_per_call": round(1000 * server_cpu_s / report.calls, 3)}


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process (Linux: /proc/PID/stat fields 14 and 15)."""
    fields_after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields_after_name[11]) + int(fields_after_name[12])) / os.sysconf("SC_CLK_TCK")


def seconds_since_process_start() -> float:
    """Wall seconds since this process started (Linux: its start time in /proc/self/stat, in
    clock ticks since boot, against /proc/uptime)."""
    fields_after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    started = int(fields_after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
    return float(Path("/proc/uptime").read_text().split()[0]) - started


def _cpu_seconds() -> float:
    """CPU time of this process and of its ended child processes (the client processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def test_host(name: str, ports: list[int], per_endpoint: int) -> HostConfig:
    """The test server's configuration: one endpoint per port, `per_endpoint` requests in flight each."""
    config = HostConfig(name=name, kind="openai", model="throughput-test", max_concurrency=per_endpoint,
                        timeout_s=30.0, max_retries=2)
    return with_base_urls(config, [f"http://127.0.0.1:{port}/v1" for port in ports])


def run_levels(store: Store, port: int, server_pid: int, args: argparse.Namespace) -> dict:
    levels = {}
    for concurrency in args.concurrency:
        calls = args.calls_at_1 if concurrency == 1 else args.calls
        host_config = test_host(f"throughput-c{concurrency}", [port], concurrency)
        processes = min(args.processes, concurrency)
        result = enumerate_level(store, host_config, concurrency, calls, processes, server_pid)
        ideal = concurrency / args.latency
        levels[str(concurrency)] = {**result, "processes": processes, "ideal_calls_per_s": round(ideal, 1),
                                    "ratio": round(result["calls_per_s"] / ideal, 3)}
        print(json.dumps({"concurrency": concurrency, **levels[str(concurrency)]}), flush=True)
    return levels


def run_endpoints(store: Store, ports: list[int], server_pid: int, args: argparse.Namespace) -> dict:
    one_host = test_host("throughput-1-endpoint", ports[:1], args.per_endpoint)
    many_host = test_host(f"throughput-{len(ports)}-endpoints", ports, args.per_endpoint)
    one = enumerate_level(store, one_host, args.per_endpoint, args.calls, 1, server_pid)
    many = enumerate_level(store, many_host, args.per_endpoint * len(ports), args.calls, 1, server_pid)
    return {"per_endpoint": args.per_endpoint, "one_endpoint": one, f"{len(ports)}_endpoints": many,
            "speedup": round(many["calls_per_s"] / one["calls_per_s"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="the test server's answer time in seconds")
    parser.add_argument("--calls", type=int, default=3000, help="calls per concurrency level")
    parser.add_argument("--calls-at-1", type=int, default=60, help="calls at concurrency 1")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--endpoints", type=int, default=1, help="also compare N endpoints against one")
    parser.add_argument("--per-endpoint", type=int, default=16, help="requests in flight per endpoint")
    parser.add_argument("--processes", type=int, default=1,
                        help="client processes at each concurrency level (`forge enumerate --processes`)")
    args = parser.parse_args()
    with fixed_latency_server(args.latency, max(1, args.endpoints)) as (ports, server_pid):
        highest = max([*args.concurrency, args.per_endpoint * args.endpoints])
        result = {"latency_s": args.latency, "processes": args.processes, "load_average_before": os.getloadavg(),
                  "cpus": os.cpu_count(), "server_check": check_server(SPAWN, ports, args.latency, highest)}
        with tempfile.TemporaryDirectory() as scratch:
            store = Store(Path(scratch) / "throughput.duckdb")
            import_benchmarks(store, config.benchmarks_dir())
            result["concurrency"] = run_levels(store, ports[0], server_pid, args)
            if args.endpoints > 1:
                result["endpoints"] = run_endpoints(store, ports, server_pid, args)
            # each run returns once its writer has flushed its last row
            result["wall_s_process_start_to_last_row"] = round(seconds_since_process_start(), 2)
        result["load_average_after"] = os.getloadavg()
        print(json.dumps(result))


if __name__ == "__main__":
    main()
