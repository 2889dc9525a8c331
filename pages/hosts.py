"""Hosts: the built-in and stored host configurations; add, edit, remove and test them."""


import streamlit as st

from app import data, retrievers_view, ui
from forge_core.errors import InvalidInput
from forge_core.evidence.depth_check import CHECK_QUESTIONS, DEFAULT_QUESTIONS, HostCheckRequest, run_host_check
from forge_core.evidence.host_check import CHECK_QUESTION, check_host
from forge_core.hosts.base import HostConfig
from forge_core.hosts.depth_maps import CUSTOM, PROTOCOL_PRESETS
from forge_core.hosts.models import MODELS
from forge_core.hosts.registry import (
    BUILTIN_HOSTS,
    HostEdit,
    depth_map_text,
    edit_host,
    get_host_config,
    new_host_config,
    remove_host,
    save_host_config,
    save_host_prices,
    with_base_urls,
    with_depth_map,
)
from forge_core.records import HostPrices
from forge_core.store import Store

THINKING_CONTROLS = tuple(dict.fromkeys([*PROTOCOL_PRESETS["openai"], *PROTOCOL_PRESETS["anthropic"], CUSTOM]))
KINDS = ("openai", "anthropic", "embedded")
NEW_HOST = "New host"


def host_form(store: Store, configs: list[HostConfig]) -> None:
    """Add a host, or edit a stored one (the same requests as `forge host add`, `edit` and `remove`)."""
    stored = [c.name for c in configs if c.name not in BUILTIN_HOSTS]
    editing = st.selectbox("Host to edit", [NEW_HOST, *stored])
    current = HostConfig(name="", kind="openai", model="") if editing == NEW_HOST else get_host_config(store, editing)
    fixed = editing != NEW_HOST  # a stored host keeps its kind, model and thinking control (outcomes depend on them)
    with st.form("host"):
        name_column, kind_column = st.columns(2)
        name = name_column.text_input("Name", current.name, disabled=editing != NEW_HOST)
        kind = kind_column.selectbox("Kind", KINDS, index=KINDS.index(current.kind), disabled=fixed,
                                     help="openai: any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI, "
                                          f"DeepSeek). embedded: a model FORGE serves itself ({', '.join(MODELS)}), "
                                          "no base URL; e.g. the built-in model under another name, its outcomes "
                                          "kept apart.")
        base_urls = st.text_area(
            "Base URLs", "\n".join(current.base_urls), placeholder="http://127.0.0.1:8000/v1",
            help="One per line. Several URLs are replicas of the same model (e.g. vLLM data-parallel "
                 "servers): each request goes to the least-loaded healthy one; a failing one is rested.")
        model_column, thinking_column = st.columns(2)
        model = model_column.text_input("Model", current.model, disabled=fixed)
        thinking = thinking_column.selectbox("Thinking control", THINKING_CONTROLS,
                                             index=THINKING_CONTROLS.index(current.thinking), disabled=fixed,
                                             help="A depth-map preset (see docs/hosts.md); "
                                                  "none: no reasoning budget (6 arms). Editing the map below makes "
                                                  "it a custom one.")
        depth_map = st.text_area(
            "Depth map (JSON)", depth_map_text(current), height=260, disabled=fixed,
            help="Per depth, the request fields sent (\"$budget\": the depth's budget, \"$cap\": the output cap) and "
                 "whether temperature/top_p are sent; then where reasoning comes back. Leave it as shown to use the "
                 "preset chosen above.")
        if current.depth_map.notes:
            st.caption(f"{current.thinking}: {current.depth_map.notes}")
        budget_forcing = st.checkbox(
            "Budget forcing", current.budget_forcing,
            help="Stop reasoning at the budget, close the thinking block and continue for the answer (two calls, "
                 "both charged). For engines that continue a partial assistant message: vLLM (continue_final_message) "
                 "and llama.cpp (the llamacpp preset: its /apply-template and raw /completion).")
        key_column, concurrency_column = st.columns(2)
        api_key_env = key_column.text_input("API key environment variable", current.api_key_env,
                                            placeholder="e.g. OPENAI_API_KEY (the name, never the key)")
        concurrency = concurrency_column.number_input(
            "Requests in flight per URL", 1, 1024, None if editing == NEW_HOST else current.max_concurrency,
            placeholder=f"default {HostConfig.max_concurrency}; embedded {BUILTIN_HOSTS['embedded'].max_concurrency}")
        if st.form_submit_button("Save", type="primary"):
            with ui.user_errors(stop=False):
                if fixed:  # the same request as `forge host edit`
                    edit_host(store, HostEdit(editing, tuple(base_urls.splitlines()), api_key_env.strip(), concurrency,
                                              budget_forcing))
                else:
                    if not name.strip() or not model.strip():
                        raise InvalidInput("a host needs a name and a model")
                    added = new_host_config(name.strip(), kind, model.strip(), api_key_env=api_key_env.strip(),
                                            max_concurrency=concurrency, budget_forcing=budget_forcing)
                    save_host_config(store, with_base_urls(with_depth_map(added, thinking, depth_map),
                                                           base_urls.splitlines()))
                data.refresh()
                ui.flash(f"Host '{name.strip()}' saved.")
                st.rerun()
    if editing != NEW_HOST and st.button(f"Remove '{editing}'", icon=":material/delete:"):
        with ui.user_errors(stop=False):
            remove_host(store, editing)
            data.refresh()
            ui.flash(f"Host '{editing}' removed.")
            st.rerun()


def prices_form(store: Store, names: list[str], prices: dict[str, HostPrices]) -> None:
    """A host's prices per million tokens (as `forge host edit --price-in/--price-out`)."""
    st.caption("US dollars per million tokens, as the host's provider charges them (built-in hosts too: price "
               "your own hardware's time). The Enumerate page and `forge enumerate --estimate` price a plan with "
               "them; `--budget-usd` stops a run on them. Prices never change a host's configuration hash.")
    priced = st.selectbox("Host to price", names)
    current_prices = prices.get(priced)
    with st.form("prices"):
        in_column, out_column = st.columns(2)
        price_in = in_column.number_input("USD per million input tokens", min_value=0.0, format="%.4f",
                                          value=current_prices.usd_per_million_in if current_prices else 0.0)
        price_out = out_column.number_input("USD per million output tokens", min_value=0.0, format="%.4f",
                                            value=current_prices.usd_per_million_out if current_prices else 0.0)
        if st.form_submit_button("Save prices"):
            with ui.user_errors(stop=False):
                save_host_prices(store, HostPrices(priced, price_in, price_out))
                ui.flash(f"Prices of '{priced}' saved.")
                st.rerun()


def host_test(store: Store, names: list[str]) -> None:
    """One short real call to a host, its answer, tokens and latency."""
    st.caption(f"One short real call: “{CHECK_QUESTION}” on the Direct arm.")
    tested = st.selectbox("Host to test", names)
    if st.button("Test", icon=":material/network_check:"):
        with ui.user_errors(stop=False), st.spinner(f"Calling {tested}…"):
            answer = check_host(data.served_host(get_host_config(store, tested)))
            st.success(f"**Answer:** {answer.answer}")
            columns = st.columns(3)
            columns[0].metric("Tokens in", answer.tokens_in)
            columns[1].metric("Tokens out", answer.tokens_out)
            columns[2].metric("Latency", f"{answer.latency_ms:,.0f} ms")


def depth_check(store: Store, names: list[str], checks: dict[str, dict]) -> None:
    """Check that a host honours each thinking depth, and show its stored check."""
    st.caption("Sends each depth of the host's alphabet on short questions and checks that the host does what the "
               "depth asks: no reasoning when off, reasoning within the budget when on. A 12-arm enumeration needs "
               "every depth honoured. The same as `forge host check NAME`.")
    checked_name = st.selectbox("Host to check", names)
    stored_check = checks.get(checked_name)
    questions = st.number_input("Questions per depth", 1, len(CHECK_QUESTIONS), DEFAULT_QUESTIONS)
    if st.button("Check depths", icon=":material/fact_check:"):
        with ui.user_errors(stop=False), st.spinner(f"Checking {checked_name}…"):
            progress = st.progress(0.0)
            report = run_host_check(store, HostCheckRequest(checked_name, int(questions)),
                                    on_progress=lambda done, total: progress.progress(done / total))
            data.refresh()
            ui.flash(f"Depth check of '{checked_name}' stored: {ui.depth_check_verdict(report)}.")
            st.rerun()
    if stored_check is None:
        st.info(f"'{checked_name}' has no depth check for its current configuration.", icon=":material/info:")
    else:
        st.dataframe(ui.depth_check_frame(stored_check), hide_index=True)


st.title("Hosts")
st.caption("API keys are never stored: a host names the environment variable that holds its key, "
           "read when a call is made.")
store = data.store()
ui.show_flash()
with ui.user_errors():
    configs = data.host_configs(store)
checks, prices = data.depth_checks(store, configs), data.host_prices(store, configs)
st.dataframe(ui.hosts_frame(configs, checks, prices), hide_index=True)
names = [c.name for c in configs]
ui.lazy_sections([("Add or edit a host", "hosts-edit", lambda: host_form(store, configs)),
                  ("Prices", "hosts-prices", lambda: prices_form(store, names, prices)),
                  ("Test a host", "hosts-test", lambda: host_test(store, names)),
                  ("Check thinking depths", "hosts-depths", lambda: depth_check(store, names, checks))])
retrievers_view.retrievers_section(store, [name for name, stats in data.benchmark_stats(store).items()
                                           if stats.get("documents")])
