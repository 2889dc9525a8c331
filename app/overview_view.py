"""The Overview's first contact: what FORGE does, what the store holds (hosts and their models,
benchmarks, how the outcomes were made), the three uses (the README's) with their pages, and the
terms a newcomer meets on every page. Every number comes from the store."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.ui import PAGES_DIR
from forge_core.hosts.base import HostConfig


@dataclass(frozen=True)
class Use:
    """One of the dashboard's three uses as the Overview offers it: its title (the README's, word for
    word), what it does there, and the pages that serve it as (script, URL path, page title, icon)."""

    title: str
    summary: str
    links: tuple[tuple[str, str, str, str], ...]


USES = (
    Use("1. Explore the Pareto trade-offs",
        "Every policy's F1 against its token cost, the frontier and each point's interval; where a router sends "
        "which questions, each query opened with every arm's answer.",
        (("pareto.py", "pareto", "Pareto", ":material/scatter_plot:"),
         ("action_map.py", "action-map", "Action map", ":material/map:"),
         ("queries.py", "queries", "Queries", ":material/table_rows:"))),
    Use("2. Tune the cost weights",
        "Move λ_in / λ_out (shared by the Pareto, Action map, Transfer and Live query pages) and see what to deploy "
        "at them, or calibrate them to a token budget; train routers and check them on another host.",
        (("pareto.py", "pareto", "Pareto", ":material/tune:"),
         ("train.py", "train", "Train", ":material/model_training:"),
         ("transfer.py", "transfer", "Transfer", ":material/swap_horiz:"))),
    Use("3. Demo routing live",
        "Pick a question, press Route and answer: the chosen arm, the evidence, the answer and its F1 beside "
        "Always-Raw's, and the tokens saved.",
        (("live_query.py", "live-query", "Live query", ":material/chat:"),)),
)

TERMS = {
    "arm": "one way to answer a query: a support form (direct: the question only; summary: compressed "
           "passages; raw: the retrieved passages) with a thinking depth (no_think, cot, ...), e.g. raw:no_think.",
    "alphabet": "the arms a host is routed over: 6 on a plain host, 12 on a thinking host.",
    "oracle": "per query, the arm(s) of highest utility U = F1 − λ_in c_in − λ_out c_out; it sees the scores, so "
              "it is a reference no router can deploy.",
    "probes": "four cheap host calls a Full router makes before routing (a Lite router needs none).",
    "complete query": "a question whose every arm of the host's alphabet has an answer without error: only those "
                      "compare arms and routers fairly.",
    "support rate": "the share of answers the evidence in their prompt supports, by an evaluator host "
                    "(`forge rewards support`).",
    "regret": "the oracle's utility minus that of the arm a router chose (0: it chose an oracle arm).",
}


def first_contact(hosts: list[str], configs: dict[str, HostConfig], benchmarks: list[str],
                  complete: dict[str, int]) -> None:
    """A few lines on FORGE and this store, and the three uses (`USES`) with links to their pages."""
    st.markdown("**FORGE routes a frozen LLM per query**: for each question it chooses what evidence the model gets "
                "(none, a compressed summary, or raw passages) and how much it may reason, so answers get better "
                "while tokens get fewer. A small router learns the choice from stored outcomes of every choice.")
    models = ", ".join(f"**{host}** ({configs[host].model if host in configs else 'unknown model'}, "
                       f"{complete.get(host, 0):,} complete queries)" for host in hosts)
    st.markdown(f"This store holds the answers of {models} to every arm on {len(benchmarks)} benchmarks "
                f"({', '.join(benchmarks)}), enumerated on CPU with `forge enumerate` (each question answered by "
                "every arm, scored by F1 against its gold answers, tokens counted) and shipped as the demo export "
                "(`forge store load-demo`), with the routers trained on them and their crossfit runs.")
    for column, use in zip(st.columns(len(USES)), USES):
        column.markdown(f"**{use.title}**")
        column.caption(use.summary)
        for script, url_path, label, icon in use.links:
            column.page_link(st.Page(PAGES_DIR / script, url_path=url_path), label=label, icon=icon)
    with st.expander("Terms used on these pages", icon=":material/help:"):
        st.markdown("\n".join(f"- **{term}**: {meaning}" for term, meaning in TERMS.items()))

