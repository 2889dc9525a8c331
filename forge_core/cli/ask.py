"""`forge ask`: one question answered on a host, under a hand-picked arm or a router's."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from forge_core.arms import RAW_NO_THINK
from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    GuardFallbackOption,
    chosen_retriever,
    open_store,
    print_json,
    warn_if_other_host,
)
from forge_core.errors import InvalidInput
from forge_core.routing.utility import DEFAULT_LAMBDA_IN, DEFAULT_LAMBDA_OUT


def ask(
    question: Annotated[Optional[str], typer.Argument(
        help="The question (or the claim, for fever); with --example, taken from the store.")] = None,
    benchmark: Annotated[str, typer.Option(
        help="Whose corpus to retrieve from: a built-in benchmark or one imported with "
             "`data import-file`.")] = "hotpotqa",
    arm: Annotated[Optional[str], typer.Option(
        help="support:thinking, e.g. raw:no_think (default raw:no_think; "
             "with --route: a hand-picked override).")] = None,
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    route: Annotated[bool, typer.Option(
        "--route", help="Route with a trained router, answer with its arm, and compare with Always-Raw "
                        "(its stored cost, or an extra call that routing does not need).")] = False,
    router: Annotated[Optional[str], typer.Option(
        help="With --route: a checkpoint id (default: the newest Lite checkpoint of the host).")] = None,
    guard: Annotated[Optional[float], typer.Option(
        "--guard", help="With --route: guard the router for this risk, as `forge serve --guard` does (the best "
                        "fixed arm unless the router's margin clears its threshold).")] = None,
    guard_fallback: GuardFallbackOption = "arm",
    compare_raw: Annotated[bool, typer.Option(
        "--compare-raw", help="With --route: also answer with raw:no_think and show both (an extra call that "
                              "routing does not need).")] = False,
    example: Annotated[Optional[str], typer.Option(
        help="A stored example id of --benchmark: its question, scored against its gold answers.")] = None,
    lambda_in: Annotated[float, typer.Option(help="With --route: the input-token cost weight a cost-conditioned "
                                                  "router decides at (others ignore it).")] = DEFAULT_LAMBDA_IN,
    lambda_out: Annotated[float, typer.Option(help="With --route: the output-token cost weight.")] = DEFAULT_LAMBDA_OUT,
    retriever: Annotated[Optional[str], typer.Option(
        help="Where the evidence comes from: a retriever name (see `forge retriever list`)."
             + HOST_RETRIEVER_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Retrieve, build the arm's prompt, ask the host, and show evidence, answer, tokens and latency;
    with --route, a trained router picks the arm and Always-Raw's cost is shown beside it (a
    demonstration: unless stored, it takes an extra call that routing does not need)."""
    from forge_core.routing.ask import AskRequest, run_ask
    from forge_core.routing.utility import CostWeights

    if not route and (router or compare_raw or guard is not None):
        raise InvalidInput("--router, --guard and --compare-raw go with --route")
    retriever = chosen_retriever(host, retriever)
    request = AskRequest(question=question or "", benchmark=benchmark, host_name=host,
                         arm=arm or (None if route else RAW_NO_THINK), checkpoint_id=router, example_id=example,
                         always_raw="off" if not route else "answer" if compare_raw else "cost",
                         weights=CostWeights(lambda_in, lambda_out), retriever=retriever)
    store = open_store()
    if router:
        warn_if_other_host(store, router, host)
    inputs = request.check(store)
    result = run_ask(store, request, inputs=inputs, guard=_guard(store, inputs, request, guard, guard_fallback))
    if not route:
        _print_plain(result, host, retriever, as_json)
    elif as_json:
        print_json(result.to_json())
    else:
        _print_routed(result, store)


def _guard(store: Any, inputs: Any, request: Any, risk: float | None, fallback: str) -> Any:
    """The router's guard for `--guard` (None without it), fitted as `forge serve --guard` fits it;
    under a mix fallback, the arm the mix draws for the question is its fallback."""
    from forge_core.routing.guard import check_guard_options

    check_guard_options(risk, fallback)
    if risk is None or inputs.checkpoint_id is None:
        return None
    from forge_core.policies.guard import guard_for_question
    from forge_core.reports.checkpoint_guard import checkpoint_guard

    guard = checkpoint_guard(store, inputs.checkpoint_id, request.weights, risk, fallback)
    return guard_for_question(guard, inputs.question, inputs.host_config.alphabet_size)


def _print_plain(result: Any, host: str, retriever: str, as_json: bool) -> None:
    """`forge ask` without --route: the answer under the given arm."""
    answer = result.answer
    if as_json:
        print_json({"answer": answer.extracted, "arm": answer.arm, "retriever": retriever,
                    "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
                    "latency_ms": round(answer.latency_ms, 1),
                    "support_text": answer.support_text, "raw_answer": answer.answer, "f1": result.f1})
        return
    f1 = "" if result.f1 is None else f", F1 {result.f1:.2f}"
    _print_answer(Console(), answer, f"answer ({answer.arm} on {host})", f1)


def _print_answer(out: Console, answer: Any, title: str, suffix: str = "") -> None:
    """An answer's evidence, text, scored answer, tokens and latency, for people."""
    if answer.support_text:
        out.rule("evidence")
        out.print(answer.support_text, highlight=False)
    out.rule(title)
    out.print(answer.answer, highlight=False)
    out.print(f"\nscored answer: {answer.extracted}\ntokens in {answer.tokens_in}, out {answer.tokens_out}, "
              f"latency {answer.latency_ms:.0f} ms{suffix}", highlight=False)


def _print_routed(result: Any, store: Any) -> None:
    """A routed answer beside Always-Raw, for people; the router by the pages' name and its full id."""
    from forge_core.reports.checkpoint_views import checkpoint_names, name_with_id
    from forge_core.routing.live import EXTRA_CALL

    out = Console()
    router = name_with_id(checkpoint_names(store.checkpoints()), result.checkpoint_id)
    chosen = "arm picked by hand" if not result.probabilities else (
        f"router {router}, p={result.probabilities[result.router_arm]:.2f}, routing {result.routing_ms:.0f} ms")
    guard = result.guard_record()
    if guard is not None:
        chosen += f"\nguard: {guard['why']}"
    if result.probe_calls:
        chosen += f", {result.probe_calls} probes ({result.probe_tokens} tokens)"
    f1 = "" if result.f1 is None else f", F1 {result.f1:.2f}"
    # the router on a line of its own: in a rule's title a narrow terminal cuts its id
    _print_answer(out, result.answer, f"answer ({result.arm} on {result.host})",
                  f"{f1}\n{chosen}\nrouting and answering: {result.host_calls} host calls, {result.tokens} tokens")
    if result.raw_cost.source == EXTRA_CALL:
        out.rule("Always-Raw (raw:no_think): an extra call that routing does not need")
        raw_f1 = "" if result.raw_f1 is None else f", F1 {result.raw_f1:.2f}"
        out.print(f"{result.raw_answer.answer}\nscored answer: {result.raw_answer.extracted}{raw_f1}",
                  highlight=False)
    out.print(f"Always-Raw would cost {result.raw_cost.tokens} tokens ({result.raw_cost.source}); "
              f"saved {result.tokens_saved:+d} tokens ({result.saved_percent:+.1f}%)", highlight=False)

