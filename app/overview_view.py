"""The Overview's first contact: what FORGE does, what the store holds (hosts and their models,
benchmarks, how the outcomes were made), the three uses one link each, and the terms a newcomer
meets on every page. Every number comes from the store."""

from __future__ import annotations

import streamlit as st

from app.ui import PAGES_DIR
from forge_core.hosts.base import HostConfig

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
    """A few lines on FORGE and this store, and a link to each of the three uses."""
    st.markdown("**FORGE routes a frozen LLM per query**: for each question it chooses what evidence the model gets "
                "(none, a compressed summary, or raw passages) and how much it may reason, so answers get better "
                "while tokens get fewer. A small router learns the choice from stored outcomes of every choice.")
    models = ", ".join(f"**{host}** ({configs[host].model if host in configs else 'unknown model'}, "
                       f"{complete.get(host, 0):,} complete queries)" for host in hosts)
    st.markdown(f"This store holds the answers of {models} to every arm on {len(benchmarks)} benchmarks "
                f"({', '.join(benchmarks)}), enumerated on CPU with `forge enumerate` (each question answered by "
                "every arm, scored by F1 against its gold answers, tokens counted) and shipped as the demo export "
                "(`forge store load-demo`), with the routers trained on them and their crossfit runs.")
    uses = (("pareto.py", "pareto", "1. Explore the Pareto trade-offs", ":material/scatter_plot:",
             "Every policy's F1 against its token cost, the frontier and the decision."),
            ("live_query.py", "live-query", "2. Tune the weights and route live", ":material/chat:",
             "Move λ_in / λ_out and see the router's arm change; ask a question."),
            ("queries.py", "queries", "3. Find the queries a router gets wrong", ":material/table_rows:",
             "Every query with the router's regret, worst first."))
    for column, (script, url_path, label, icon, help) in zip(st.columns(len(uses)), uses):
        column.page_link(st.Page(PAGES_DIR / script, url_path=url_path), label=label, icon=icon, help=help)
    with st.expander("Terms used on these pages", icon=":material/help:"):
        st.markdown("\n".join(f"- **{term}**: {meaning}" for term, meaning in TERMS.items()))

