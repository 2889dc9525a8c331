"""Shared UI pieces: friendly errors, empty-store guards and small tables."""

from __future__ import annotations

import contextlib
import dataclasses
import html
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from app import data
from forge_core.arms import thinking_modes
from forge_core.errors import ForgeError
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, retriever_option, retriever_phrase
from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import BUILTIN_HOSTS
from forge_core.records import HostPrices
from forge_core.store import Store

# The jobs, the enumeration planning, retrieval and the depth check (aiohttp, httpx, scipy.sparse) are imported
# by the functions that use them: the pages that never do (the Overview) do not wait for them.
if TYPE_CHECKING:
    from forge_core.enumeration.planning import EnumerationPlan
    from forge_core.evidence.answering import Evidence
    from forge_core.jobs import JobProgress, StartedJob

PAGES_DIR = Path(__file__).resolve().parent.parent / "pages"
EMPTY_STORE = ("The store is empty: run `forge data import` (and `forge store load-demo` for the demo "
               "outcomes), then reload this page.")
NAME_CHAR_EM = 0.6  # a generous width of one character of a name card's font, in em (Source Sans averages ~0.5)
NO_OUTCOMES = ("No outcomes yet: start a job on the Enumerate page (or run `forge enumerate`), "
               "or load the demo outcomes with `forge store load-demo`.")


def no_checkpoints(host: str, retriever: str = DEFAULT_RETRIEVER) -> str:
    """The next step when a host has no router checkpoint (trained under the retriever) yet."""
    under = retriever_phrase(retriever)
    return (f"No router checkpoints for host '{host}'{under} yet: train one on the Train page or with "
            f"`forge train --stage 1 --host {host}{retriever_option(retriever)}`.")


@contextlib.contextmanager
def user_errors(stop: bool = True) -> Iterator[None]:
    """Show a library error a user can act on as one message (never a traceback); by default
    the page stops there."""
    try:
        yield
    except ForgeError as error:  # a user mistake or a missing step: one message with the next step
        st.error(str(error), icon=":material/error:")
        if stop:
            st.stop()


def lazy_sections(sections: Sequence[tuple[str, str, Callable[[], None]]]) -> None:
    """Each `(title, key, draw)` as an expander whose content `draw()` draws only while it is open (a closed
    section costs the page nothing; opening or closing it reruns the page)."""
    for title, key, draw in sections:
        with (expander := st.expander(title, key=key, on_change="rerun")):
            if expander.open:
                draw()


def flash(message: str) -> None:
    """Show `message` as a success after the next rerun (for writes that rerun the page)."""
    st.session_state["flash"] = message


def show_flash() -> None:
    """Show, once, the message left by `flash`."""
    message = st.session_state.pop("flash", None)
    if message:
        st.success(message)


def hosts_with_outcomes_or_stop(store: Store) -> list[str]:
    """The hosts that have outcomes; stops the page with the next step when the store has no
    benchmarks or no outcomes yet."""
    with user_errors():
        require_benchmarks(data.benchmark_stats(store))
        hosts = data.hosts_with_outcomes(store)
    if not hosts:
        st.info(NO_OUTCOMES, icon=":material/hourglass_empty:")
        st.stop()
    return hosts


def require_benchmarks(stats: dict[str, dict]) -> None:
    """Stop the page with the next step when no benchmark is imported."""
    if not stats:
        st.info(EMPTY_STORE, icon=":material/database:")
        st.stop()


def name_metric(container: Any, label: str, value: str, help: str | None = None) -> None:
    """A metric card shown whole, for a name as value or a long label: both wrap rather than
    being cut, as `st.metric` cuts them, in the sizes of `st.metric`'s label and value. The value
    wraps between words (and after ":", "_" and "-"); where its longest word is wider than the card
    at that size, its font shrinks until the word fits, so no word is broken (`name_font_size`)."""
    with container:
        st.markdown(f":small[{label}]", help=help)
        breakable = html.escape(value).replace(":", ":<wbr>").replace("_", "_<wbr>")  # "summary:" / "no_think"
        st.markdown(f'<div style="container-type: inline-size"><div data-card="{html.escape(label, quote=True)}" '
                    f'style="font-size: {name_font_size(value)}; line-height: 1.2; overflow-wrap: break-word">'
                    f'{breakable}</div></div>', unsafe_allow_html=True)


def name_font_size(value: str) -> str:
    """A name card's font size (CSS): `st.metric`'s 2.25rem, or less where the name's longest word
    (the text between spaces, ":", "_" and "-") at `NAME_CHAR_EM` em a character is wider than
    its card (100cqi)."""
    longest = max(len(word) for word in re.split(r"(?<=[:_-])|\s+", value))
    return f"min(2.25rem, {100 / (NAME_CHAR_EM * max(longest, 1)):.1f}cqi)"


def format_duration(seconds: float | None) -> str:
    """e.g. "42 s", "3 min 5 s", "2 h 10 min"; "–" when unknown."""
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def benchmarks_frame(stats: dict[str, dict]) -> pd.DataFrame:
    """One row per imported benchmark: examples, documents and split sizes."""
    return pd.DataFrame([
        {"benchmark": name, "examples": row["examples"], "documents": row["documents"], **row["splits"]}
        for name, row in stats.items()
    ])


def hosts_frame(configs: list[HostConfig], checks: dict[str, dict] | None = None,
                prices: dict[str, HostPrices] | None = None) -> pd.DataFrame:
    """One row per host configuration, with its depths, what its depth check found and its prices if
    set; the API key is shown only as set or missing."""
    checks, prices = checks or {}, prices or {}
    def key_state(config: HostConfig) -> str:
        if not config.api_key_env:
            return "not needed"
        return "set" if os.environ.get(config.api_key_env) else "missing"

    return pd.DataFrame([
        {"name": c.name, "source": "built-in" if c.name in BUILTIN_HOSTS else "stored", "kind": c.kind,
         "model": c.model, "base URLs": "\n".join(c.base_urls) or "(local)", "thinking": c.thinking,
         "depths": ", ".join(thinking_modes(c.alphabet_size)),
         "depth check": depth_check_verdict(checks.get(c.name)),
         "API key variable": c.api_key_env, "key": key_state(c), "concurrency": c.max_concurrency,
         "USD / 1M in": prices[c.name].usd_per_million_in if c.name in prices else None,
         "USD / 1M out": prices[c.name].usd_per_million_out if c.name in prices else None}
        for c in configs
    ])


def depth_check_verdict(report: dict | None) -> str:
    """A host's depth check in a few words: "not checked", "all honoured" or the failed depths."""
    if report is None:
        return "not checked"
    from forge_core.evidence.depth_check import failed_depths

    failed = [f"{depth} {verdict}" for depth, verdict in failed_depths(report).items()]
    return ", ".join(failed) or f"all {len(report['depths'])} honoured"


def depth_check_frame(report: dict) -> pd.DataFrame:
    """One row per checked depth: budget, reasoning tokens min/median/max, latency and verdict."""
    return pd.DataFrame([
        {"depth": row["depth"], "budget": row["budget"], "reasoning min": row["reasoning_min"],
         "reasoning median": row["reasoning_median"], "reasoning max": row["reasoning_max"],
         "counted by": ", ".join(row["reasoning_methods"]), "median latency (ms)": row["latency_median_ms"],
         "verdict": row["verdict"], "with budget forcing": row["with_budget_forcing"], "note": row["note"]}
        for row in report["depths"]])


AUTO_ESTIMATE_CALLS = 2_000  # plans up to this many missing calls are priced as the selection changes


def plan_estimate(store: Store, plan: EnumerationPlan) -> None:
    """The plan's missing calls, their tokens and their price; a larger plan (whose tokens take a
    while to count) is priced when asked, and stays priced while the selection stays."""
    missing = data.missing_calls(store, plan)
    if missing == 0:
        st.caption("Nothing missing: every planned call is stored.")
        return
    asked = st.session_state.setdefault("estimated_plans", set())
    if missing > AUTO_ESTIMATE_CALLS and plan not in asked:
        if not st.button(f"Estimate tokens and price ({missing:,} missing calls to count)",
                         icon=":material/calculate:"):
            return
        asked.add(plan)
    estimate = data.plan_estimate(store, plan)
    columns = st.columns(5)
    columns[0].metric("Missing calls", f"{estimate.calls:,}")
    columns[1].metric("Input tokens", f"{estimate.tokens_in:,}", help=estimate.input_method)
    columns[2].metric("Expected output tokens", f"{estimate.tokens_out:,.0f}",
                      help="The host's stored mean per arm (and benchmark), else the arm's cap.")
    no_price = "no prices: set them on the Hosts page"
    columns[3].metric("Price", no_price if estimate.usd is None else f"{estimate.usd:,.2f} USD")
    columns[4].metric("Batch price", no_price if estimate.batch_usd is None else f"{estimate.batch_usd:,.2f} USD",
                      help="Through OpenAI's Batch API or Anthropic's Message Batches (half the price); "
                           "`forge enumerate ... --batch openai|anthropic` or `--to-batch FILE.jsonl`.")
    with st.expander("Calls by arm and probe"):
        st.dataframe(pd.DataFrame([dataclasses.asdict(group) for group in estimate.groups]), hide_index=True)


def jobs_frame(rows: list[tuple[dict, JobProgress]]) -> pd.DataFrame:
    """One row per job: status, progress, rate and timing."""
    return pd.DataFrame([
        {"job": p.job_id, "status": p.status, "done": p.done, "planned": p.target, "errors": p.errors,
         "rate (calls/s)": round(p.rate_per_s, 3) if p.rate_per_s else None,
         "started": row["started_at"], "finished": row["finished_at"], "message": p.message}
        for row, p in rows
    ])


def evidence_frame(evidence: Evidence) -> pd.DataFrame:
    """The retrieved passages with their BM25 scores, best first."""
    return pd.DataFrame([{"title": hit.document.title, "BM25": round(hit.score, 2), "text": hit.document.text}
                         for hit in evidence.passages])


def cancel_job_button(store: Store, row: dict, progress: JobProgress, help: str, icon: str | None = None) -> None:
    """A job's Cancel button (disabled while it is cancelling): a click asks the job to stop and
    reruns the page."""
    if st.button("Cancel", key=f"cancel-{progress.job_id}", icon=icon, disabled=progress.status == "cancelling",
                 help=help):
        from forge_core import jobs

        jobs.cancel_job(store, row)
        data.refresh()
        st.rerun()


def remember_started_job(key: str, started: StartedJob) -> None:
    """Keep a job process just spawned from this tab (session state `key`), so its panel can follow
    it until its jobs-table row appears."""
    st.session_state[key] = started
    data.refresh()


def job_ended_before_its_row(store: Store, key: str, kind: str, starting: str) -> tuple[StartedJob, str] | None:
    """For the job started from this tab (session state `key`) that has no jobs-table row yet: an
    info line while its process is `starting` (what it loads), and once the process has gone
    without a row, the process and its log tail for the caller to explain; else None."""
    from forge_core import jobs

    started = st.session_state.get(key)
    if started is None or jobs.job_for_process(store, started, kind) is not None:
        return None
    if jobs.process_alive(started.pid):
        st.info(f"Process {started.pid} is starting ({starting})…", icon=":material/hourglass_top:")
        return None
    return started, jobs.log_tail(started.log_path)


def log_excerpt(started: StartedJob, tail: str) -> str:
    """A process's log tail as a code block, with where the full log is."""
    return f"\n\n```\n{tail}\n```\nFull log: `{started.log_path}`"


RETRIEVER_KEPT = "retriever_choice"  # session state: the retriever picked last, on any page


def retriever_select(column: Any, store: Store, hosts: Sequence[str], page: str, needs_outcomes: bool = True) -> str:
    """The retriever whose evidence a page uses, beside its host select (`hosts`: the one host, or
    both of a transfer): every configured retriever, opening on the user's pick (kept across pages,
    as the router picker's), else the first host's default (`forge retriever use`, else
    bm25). With `needs_outcomes` (a page that reads stored outcomes), those a host has no outcomes
    under are marked, and picking one stops the page with the one command that makes them:
    outcomes under two retrievers never mix."""
    names = data.retriever_names(store)
    missing = {name: next((host for host in hosts if name not in data.retrievers_of(store, host)), None)
               if needs_outcomes else None for name in names}
    widget = f"{page}_retriever_select"
    kept = st.session_state.get(RETRIEVER_KEPT)
    st.session_state[widget] = kept if kept in names else data.host_retriever(store, hosts[0])
    chosen = column.selectbox(
        "Retriever", names, key=widget, on_change=_keep_retriever, args=(widget,),
        format_func=lambda name: name if missing[name] is None else f"{name} (no outcomes)",
        help="Whose evidence the Summary and Raw arms use (`--retriever`): only its outcomes, features and "
             "routers are read, and a router refuses any other; Direct outcomes use no evidence and serve every "
             "retriever. Your pick is kept on every page; add retrievers on the Hosts page.")
    if (unoffered := data.measured_only_retrievers(store)):
        from forge_core.reports.evidence import measured_only_sentence

        column.caption(f"{', '.join(unoffered)}: measured only, no outcomes",
                       help=measured_only_sentence(unoffered))
    host = missing[chosen]
    if host is not None:
        st.info(f"No outcomes of host '{host}' under retriever '{chosen}' yet: `forge enumerate --host {host}"
                f"{retriever_option(chosen)}` makes them.", icon=":material/hourglass_empty:")
        st.stop()
    return chosen


def _keep_retriever(widget: str) -> None:
    st.session_state[RETRIEVER_KEPT] = st.session_state[widget]
