"""The Hosts page's Retrievers section: list, add, remove and check the retrievers evidence comes
from (the same as `forge retriever list/add/remove/check`)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from app import data, ui
from forge_core.evidence.embedders import embedder_name
from forge_core.evidence.retriever_backends import check_retriever
from forge_core.evidence.retrievers import (
    BUILTIN_RETRIEVERS,
    KINDS,
    RetrieverConfig,
    host_default_retriever,
    hosts_defaulting_to,
    list_retriever_configs,
    remove_retriever,
    retriever_hash,
    save_retriever_config,
    set_host_default_retriever,
)
from forge_core.store import Store

NEW_RETRIEVER = "New retriever"


def retrievers_frame(configs: list[RetrieverConfig], default_of: dict[str, list[str]]) -> pd.DataFrame:
    """One row per retriever: kind, evidence settings, its own options, configuration hash and the
    hosts it is the default of (`default_of`: as `hosts_defaulting_to`)."""
    rows = [{"name": c.name, "kind": c.kind, "k": c.k, "raw words": c.raw_words, "summary words": c.summary_words,
             "embedder": c.embedder, "fusion k": c.fusion_k if c.kind == "hybrid" else None, "URL": c.url,
             "key variable": c.api_key_env, "config hash": retriever_hash(c) or "(default)",
             "default of": ", ".join(default_of.get(c.name, []))
             or ("every other host" if c.name in BUILTIN_RETRIEVERS else "")} for c in configs]
    return pd.DataFrame(rows)


def retrievers_section(store: Store, benchmarks: list[str]) -> None:
    """List, add or edit, remove and check retrievers, and set a host's default."""
    st.header("Retrievers")
    st.caption("Where Summary and Raw get their passages: bm25 (built in, the default), dense (cosine over the "
               "embedder's passage vectors), hybrid (reciprocal-rank fusion of the two) or http (your own service: "
               "POST {\"query\", \"k\"} -> [{\"title\", \"text\", \"score\"}]). See docs/retrievers.md.")
    configs = list_retriever_configs(store)
    names = [c.name for c in configs]
    st.dataframe(retrievers_frame(configs, hosts_defaulting_to(store)), hide_index=True)
    ui.lazy_sections([("A host's default retriever", "retrievers-default", lambda: _host_default(store, names)),
                      ("Add or edit a retriever", "retrievers-edit", lambda: _edit(store, configs)),
                      ("Check a retriever", "retrievers-check", lambda: _check(store, names, benchmarks))])


def _edit(store: Store, configs: list[RetrieverConfig]) -> None:
    """Add a retriever, or edit or remove a stored one."""
    stored = [c.name for c in configs if c.name not in BUILTIN_RETRIEVERS]
    editing = st.selectbox("Retriever to edit", [NEW_RETRIEVER, *stored])
    current = RetrieverConfig("") if editing == NEW_RETRIEVER else next(c for c in configs if c.name == editing)
    _form(store, current, editing == NEW_RETRIEVER)
    if editing != NEW_RETRIEVER and st.button(f"Remove retriever '{editing}'", icon=":material/delete:"):
        with ui.user_errors(stop=False):
            remove_retriever(store, editing)
            ui.flash(f"Retriever '{editing}' removed.")
            st.rerun()


def _form(store: Store, current: RetrieverConfig, new: bool) -> None:
    with st.form("retriever"):
        name_column, kind_column = st.columns(2)
        name = name_column.text_input("Retriever name", current.name, disabled=not new)
        kind = kind_column.selectbox("Retriever kind", KINDS, index=KINDS.index(current.kind))
        k_column, raw_column, summary_column, fusion_column = st.columns(4)
        k = k_column.number_input("Passages (k)", 1, 50, current.k)
        raw_words = raw_column.number_input("Raw words a passage", 1, 5000, current.raw_words)
        summary_words = summary_column.number_input("Summary words", 1, 5000, current.summary_words)
        fusion_k = fusion_column.number_input("Fusion k (hybrid)", 1, 1000, current.fusion_k)
        url = st.text_input("Service URL (http)", current.url, placeholder="http://127.0.0.1:9200/forge")
        timeout_column, retries_column, key_column = st.columns(3)
        timeout_s = timeout_column.number_input("Timeout (s, http)", 0.1, 600.0, float(current.timeout_s))
        retries = retries_column.number_input("Retries (http)", 0, 10, current.retries)
        api_key_env = key_column.text_input("Key environment variable (http)", current.api_key_env,
                                            placeholder="the name, never the key")
        if st.form_submit_button("Save retriever", type="primary"):
            with ui.user_errors(stop=False):
                edited = dataclasses.replace(
                    current, name=name.strip(), kind=kind, k=int(k), raw_words=int(raw_words),
                    summary_words=int(summary_words), fusion_k=int(fusion_k), url=url.strip(),
                    timeout_s=float(timeout_s), retries=int(retries), api_key_env=api_key_env.strip(),
                    embedder=(current.embedder or embedder_name()) if kind in ("dense", "hybrid") else "")
                save_retriever_config(store, edited)
                ui.flash(f"Retriever '{edited.name}' saved.")
                st.rerun()


def _host_default(store: Store, names: list[str]) -> None:
    """A host's default retriever: what every page's Retriever select opens on and every command's
    --retriever means when left out (as `forge retriever use NAME --host HOST`)."""
    host_column, retriever_column, button_column = st.columns([2, 2, 1], vertical_alignment="bottom")
    host = host_column.selectbox("Host to set a default for", [config.name for config in data.host_configs(store)],
                                 key="retriever_default_host")
    current = host_default_retriever(store, host)
    chosen = retriever_column.selectbox("Its default retriever", names, index=names.index(current)
                                        if current in names else 0, key=f"retriever_default_of_{host}",
                                        help="What the pages open on and commands use without --retriever.")
    if button_column.button("Set default"):  # no icon: the label whole at 1,024 px
        with ui.user_errors(stop=False):
            set_host_default_retriever(store, host, chosen)
            data.refresh()
            ui.flash(f"Host '{host}' now uses retriever '{chosen}' unless told otherwise.")
            st.rerun()


def _check(store: Store, names: list[str], benchmarks: list[str]) -> None:
    st.caption("One query through the retriever (the benchmark's first question): its passages and latency. "
               "Dense and hybrid retrievers embed the corpus's passages the first time. The same as "
               "`forge retriever check NAME`.")
    if not benchmarks:
        st.info("Import a benchmark first (`forge data import`): a check retrieves from its corpus.",
                icon=":material/info:")
        return
    name_column, benchmark_column = st.columns(2)
    checked = name_column.selectbox("Retriever to check", names)
    benchmark = benchmark_column.selectbox("Corpus", benchmarks)
    if st.button("Check retriever", icon=":material/travel_explore:"):
        with ui.user_errors(stop=False), st.spinner(f"Retrieving with {checked}…"):
            report = check_retriever(store, checked, benchmark)
            if not report["ok"]:
                st.error(report["error"], icon=":material/error:")
                return
            st.success(f"{len(report['passages'])} passages in {report['latency_ms']:,.1f} ms for "
                       f"“{report['query']}”")
            st.dataframe(pd.DataFrame(report["passages"]), hide_index=True)
