"""`forge retriever`: add, list, check and remove retrievers; `forge evidence compare`: measure them."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from forge_core.cli.output import console, counting_progress, open_store, print_json
from forge_core.errors import ForgeError, InvalidInput
from forge_core.evidence.retrievers import (
    DEFAULT_FUSION_K,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    RetrieverConfig,
    retriever_hash,
)
from forge_core.evidence.settings import RAW_WORDS_PER_PASSAGE, SUMMARY_WORD_BUDGET, SUPPORT_TOP_K

retriever_app = typer.Typer(help="Add, list, check, use and remove retrievers (the evidence Summary and Raw draw "
                                 "on).", no_args_is_help=True)
evidence_app = typer.Typer(help="Measure the evidence of each retriever before any host call.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


@retriever_app.command("add")
def retriever_add(
    name: Annotated[str, typer.Argument(help="A name for this retriever.")],
    kind: Annotated[str, typer.Option(
        help="bm25, dense, hybrid (reciprocal-rank fusion of the two) or http.")] = "bm25",
    k: Annotated[int, typer.Option("--k", help="Passages Summary and Raw draw on.")] = SUPPORT_TOP_K,
    raw_words: Annotated[int, typer.Option(help="Raw's leading words of each passage.")] = RAW_WORDS_PER_PASSAGE,
    summary_words: Annotated[int, typer.Option(help="Summary's word budget.")] = SUMMARY_WORD_BUDGET,
    fusion_k: Annotated[int, typer.Option(help="hybrid: the fusion constant k of 1 / (k + rank).")] = DEFAULT_FUSION_K,
    embedder: Annotated[Optional[str], typer.Option(
        help="dense, hybrid: embedder spec (default: $FORGE_EMBEDDER or all-MiniLM-L6-v2@onnx).")] = None,
    url: Annotated[str, typer.Option(
        help='http: the service; POST {"query", "k"} -> [{"title", "text", "score"}].')] = "",
    timeout: Annotated[float, typer.Option(help="http: seconds per attempt.")] = DEFAULT_TIMEOUT_S,
    retries: Annotated[int, typer.Option(help="http: attempts after the first.")] = DEFAULT_RETRIES,
    api_key_env: Annotated[str, typer.Option(
        help="http: the environment variable holding the service's key (sent as a Bearer token).")] = "",
) -> None:
    """Add or replace a retriever configuration (a key is read from the environment at call time)."""
    from forge_core.evidence.embedders import embedder_name
    from forge_core.evidence.retrievers import save_retriever_config

    if embedder is not None and kind not in ("dense", "hybrid"):
        raise InvalidInput("--embedder goes with --kind dense or hybrid")
    config = RetrieverConfig(name=name, kind=kind, k=k, raw_words=raw_words, summary_words=summary_words,
                             fusion_k=fusion_k, embedder=embedder_name(embedder) if kind in ("dense", "hybrid") else "",
                             url=url, timeout_s=timeout, retries=retries, api_key_env=api_key_env)
    save_retriever_config(open_store(), config)
    shown = retriever_hash(config) or "none: the default evidence"
    console.print(f"retriever '{name}' saved (configuration hash {shown})")


@retriever_app.command("list")
def retriever_list(as_json: JsonFlag = False) -> None:
    """The built-in BM25 retriever and the stored ones, with their settings, configuration hashes and
    the hosts that use each by default (`forge retriever use`; every other host uses bm25)."""
    from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, hosts_defaulting_to, list_retriever_configs

    store = open_store()
    configs, default_of = list_retriever_configs(store), hosts_defaulting_to(store)
    if as_json:
        print_json({"retrievers": {c.name: {**dataclasses.asdict(c), "config_hash": retriever_hash(c),
                                            "default_of": default_of.get(c.name, [])} for c in configs}})
        return
    table = Table("name", "kind", "k", "raw words", "summary words", "options", "config hash", "default of")
    for config in configs:
        users = ", ".join(default_of.get(config.name, [])) or (
            "every other host" if config.name == DEFAULT_RETRIEVER else "")
        table.add_row(config.name, config.kind, str(config.k), str(config.raw_words), str(config.summary_words),
                      retriever_options(config), retriever_hash(config) or "(default)", users)
    Console().print(table)


@retriever_app.command("use")
def retriever_use(
    name: Annotated[str, typer.Argument(help="A retriever name (see `forge retriever list`); bm25 to go back.")],
    host: Annotated[str, typer.Option(help="The host whose default it becomes.")] = "embedded",
) -> None:
    """Make a retriever the host's default: every command's --retriever and every page's Retriever
    select then start from it for that host (an explicit --retriever still wins)."""
    from forge_core.evidence.retrievers import set_host_default_retriever
    from forge_core.hosts.registry import get_host_config

    store = open_store()
    get_host_config(store, host)  # refuses an unknown host
    set_host_default_retriever(store, host, name)
    console.print(f"host '{host}' now uses retriever '{name}' unless told otherwise")


def retriever_options(config: RetrieverConfig) -> str:
    """The kind's own options, in one line."""
    if config.kind == "dense":
        return f"embedder {config.embedder}"
    if config.kind == "hybrid":
        return f"embedder {config.embedder}, fusion k {config.fusion_k}"
    if config.kind == "http":
        key = f", key from ${config.api_key_env}" if config.api_key_env else ""
        return f"{config.url}, timeout {config.timeout_s:g} s, {config.retries} retries{key}"
    return ""


@retriever_app.command("check")
def retriever_check(
    name: Annotated[str, typer.Argument(help="A retriever name (see `forge retriever list`).")],
    benchmark: Annotated[str, typer.Option(help="Whose corpus (and first question) to try.")] = "hotpotqa",
    query: Annotated[Optional[str], typer.Option(
        help="The query to send (default: the benchmark's first question).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run one query through the retriever and report its passages and latency, or its error in one line."""
    from forge_core.evidence.retriever_backends import check_retriever

    report = check_retriever(open_store(), name, benchmark, query)
    if as_json:
        print_json(report)
        if not report["ok"]:
            raise typer.Exit(1)
        return
    if not report["ok"]:
        raise ForgeError(report["error"])
    console.print(f"retriever '{name}': {len(report['passages'])} passages in {report['latency_ms']:.1f} ms "
                  f"for {report['query']!r}", highlight=False)
    for rank, passage in enumerate(report["passages"], start=1):
        console.print(f"  [{rank}] {passage['score']:.4g}  {passage['title']}: {passage['text'][:80]}", highlight=False)


@retriever_app.command("remove")
def retriever_remove(name: Annotated[str, typer.Argument(help="A stored retriever's name.")]) -> None:
    """Remove a stored retriever configuration."""
    from forge_core.evidence.retrievers import remove_retriever

    remove_retriever(open_store(), name)
    console.print(f"retriever '{name}' removed")


@evidence_app.command("compare")
def evidence_compare(
    benchmark: Annotated[str, typer.Option(help="A benchmark with gold evidence: hotpotqa, 2wikimultihopqa, "
                                                "musique or fever.")],
    retrievers: Annotated[Optional[list[str]], typer.Option(
        "--retrievers", help="Retriever names (repeatable; default: every configured retriever).")] = None,
    k: Annotated[int, typer.Option("--k", help="Gold recall at this many passages.")] = 3,
    limit: Annotated[Optional[int], typer.Option(help="Only the first N queries with gold evidence.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Per retriever: gold-evidence recall at k, Summary's and Raw's input tokens and retrieval latency
    p50/p95, with 95% bootstrap intervals; no host is called."""
    from forge_core.evaluation.evidence_compare import EvidenceCompareRequest, run_evidence_compare

    request = EvidenceCompareRequest(benchmark, tuple(retrievers or ()), k, limit)
    with counting_progress(transient=True) as progress:
        tasks: dict[str, int] = {}

        def follow(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = progress.add_task(what, total=total)
            progress.update(tasks[what], completed=done, total=total)

        result = run_evidence_compare(open_store(), request, follow)
    if as_json:
        print_json(result.to_json())
        return
    table = Table("retriever", "kind", f"gold recall@{k}", "minus the first's", "Summary recall", "Raw recall",
                  "Summary tokens in", "Raw tokens in", "latency p50 / p95 ms",
                  title=f"{benchmark}: {result.queries} queries with gold evidence")
    for row in result.retrievers:
        low_high = row.recall_vs_first
        difference = f"[{low_high[0]:+.3f}, {low_high[1]:+.3f}]" if low_high else ""
        table.add_row(row.name, row.kind, _interval(row.recall, 3), difference,
                      _interval(row.summary_recall, 3), _interval(row.raw_recall, 3),
                      _interval(row.summary_tokens_in, 0), _interval(row.raw_tokens_in, 0),
                      f"{row.latency_p50_ms:.1f} / {row.latency_p95_ms:.1f}")
    Console().print(table)
    console.print(f"tokens: {result.token_counter}; intervals: 95% bootstrap over queries", highlight=False)


@evidence_app.command("arms")
def evidence_arms(
    benchmark: Annotated[str, typer.Option(help="The benchmark whose outcomes to compare.")],
    retrievers: Annotated[list[str], typer.Option(
        "--retrievers", help="Retriever names (repeatable); the first is the reference of the paired differences.")],
    host: Annotated[str, typer.Option(help="The host whose outcomes to compare.")] = "embedded",
    split: Annotated[str, typer.Option(help="train, dev or test.")] = "test",
    arms: Annotated[int, typer.Option(help="Alphabet size: 3, 6 or 12.")] = 6,
    as_json: JsonFlag = False,
) -> None:
    """The host's arms under each retriever side by side, on the queries complete under all of them:
    F1 with intervals, tokens, F1 minus the first retriever's (paired) and each Pareto frontier."""
    from forge_core.evaluation.evidence_arms import EvidenceArmsRequest, compare_arms

    report = compare_arms(open_store(), EvidenceArmsRequest(host, benchmark, tuple(retrievers), split, arms))
    if as_json:
        print_json(report)
        return
    table = Table("retriever", "arm", "F1", "EM", "tokens in", "tokens out", f"F1 minus {report['reference']}",
                  "frontier", title=f"{host}, {benchmark} {split}: {report['queries']} queries complete under "
                                    f"every retriever")
    for retriever in report["retrievers"]:
        for arm in retriever["arms"]:
            low, high = arm["f1_minus_reference_ci95"]
            table.add_row(retriever["name"], arm["arm"], _interval_json(arm["f1"]), _interval_json(arm["em"]),
                          f"{arm['tokens_in']:.0f}", f"{arm['tokens_out']:.0f}",
                          f"{arm['f1_minus_reference']:+.3f} [{low:+.3f}, {high:+.3f}]",
                          "yes" if arm["arm"] in retriever["pareto_frontier"] else "")
    Console().print(table)
    console.print("intervals: 95% bootstrap over queries (paired for the differences)", highlight=False)


def _interval_json(value: dict) -> str:
    low, high = value["ci95"]
    return f"{value['mean']:.3f} [{low:.3f}, {high:.3f}]"


def _interval(value, digits: int) -> str:
    return f"{value.mean:.{digits}f} [{value.low:.{digits}f}, {value.high:.{digits}f}]"
