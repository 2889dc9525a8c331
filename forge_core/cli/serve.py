"""`forge serve`: the OpenAI-compatible routing server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from forge_core.cli.output import (
    HOST_RETRIEVER_HELP,
    AddressOption,
    EngineOption,
    GuardFallbackOption,
    chosen_retriever,
    console,
    open_store,
    warn_if_other_host,
)
from forge_core.engines import DEFAULT_ENGINE, check_engine
from forge_core.errors import InvalidInput

if TYPE_CHECKING:
    from forge_core.server.deployment import WeightsRequest

DEFAULT_REPLICAS = 2  # --engine ray without --replicas


# Over 60 lines: its typer options (68 lines) are `forge serve --help`.
def serve_command(
    router: Annotated[Optional[str], typer.Option(
        help="A checkpoint id, or lite/full: the host's newest checkpoint of that variant (default: lite).")] = None,
    arm: Annotated[Optional[str], typer.Option(
        "--arm", help="Serve one fixed arm instead of a router (e.g. summary:no_think, what `forge decide` names "
                      "when no router wins); weights, budgets and a candidate are refused with it.")] = None,
    mix: Annotated[Optional[str], typer.Option(
        "--mix", help="Serve a mix of fixed arms, ARM=SHARE,ARM=SHARE (shares summing to 1; what `forge decide "
                      "--budget-tokens` names): each question answered under one arm drawn by a hash of its text, "
                      "the same question always under the same arm; refused with --arm, --router, weights, "
                      "budgets.")] = None,
    guard: Annotated[Optional[float], typer.Option(
        "--guard", help="Guard the router for this risk (e.g. 0.2, what `forge decide` names for a guarded "
                        "router): answer with the best fixed arm of its train and dev queries unless its margin "
                        "clears a threshold fitted on its dev queries so that at most this share of deviations "
                        "lose utility; refused with --arm, --mix and budgets.")] = None,
    guard_fallback: GuardFallbackOption = "arm",
    host: Annotated[Optional[str], typer.Option(
        help="The host that answers (see `forge host list`; default embedded).")] = None,
    benchmark: Annotated[Optional[list[str]], typer.Option(
        help="Whose corpus evidence is retrieved from (default hotpotqa); repeat it to retrieve from the union of "
             "several benchmarks' corpora (FEVER only on its own: its claims take their own prompt).")] = None,
    retriever: Annotated[Optional[str], typer.Option(
        help="Where the evidence comes from (see `forge retriever list`); the routers must be trained "
             "under it." + HOST_RETRIEVER_HELP)] = None,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8100,
    api_key_env: Annotated[Optional[str], typer.Option(
        help="An environment variable holding the key clients must send as `Authorization: Bearer`.")] = None,
    bind: Annotated[str, typer.Option(
        help="Address to bind; anything but 127.0.0.1 exposes the server.")] = "127.0.0.1",
    shadow_raw: Annotated[float, typer.Option(
        "--shadow-raw", help="Share of requests (0 to 1, evenly spread) that also send raw:no_think after their "
                             "response, to estimate the saving against Always-Raw at /metrics.")] = 0.0,
    lambda_in: Annotated[Optional[float], typer.Option(
        "--lambda-in", help="Serve the cost-conditioned router at this lambda_in (a per-weight router refuses "
                            "other weights); with a budget, where its controller starts.")] = None,
    lambda_out: Annotated[Optional[float], typer.Option(
        "--lambda-out", help="Serve the cost-conditioned router at this lambda_out.")] = None,
    budget_tokens: Annotated[Optional[float], typer.Option(
        "--budget-tokens", help="Hold the mean tokens a request (every host call) within 5% of this by moving the "
                                "weights along one ray; never refuses a request.")] = None,
    budgets: Annotated[Optional[Path], typer.Option(
        "--budgets", help="A JSON file client -> mean tokens a request: one controller per client "
                          "(X-Forge-Client name, or key-<hash> from `forge traffic`).")] = None,
    ratio: Annotated[Optional[float], typer.Option(
        "--ratio", help="The budgets' ray lambda_out / lambda_in (default: --lambda-out / --lambda-in, "
                        "else 2).")] = None,
    candidate: Annotated[Optional[str], typer.Option(
        "--candidate", help="A checkpoint that also routes a share of the requests in the shadow.")] = None,
    shadow_rate: Annotated[float, typer.Option(
        "--shadow-rate", help="Share of requests (0 to 1) the candidate routes; where it picks another arm, that "
                              "arm answers after the response.")] = 0.0,
    shadow_max_tokens: Annotated[Optional[int], typer.Option(
        "--shadow-max-tokens", help="Tokens the candidate's shadow answers may spend in all.")] = None,
    evaluator_host: Annotated[Optional[str], typer.Option(
        "--evaluator-host", help="A host that rates both answers where the candidate disagrees (the judge of "
                                 "`forge rewards`).")] = None,
    traffic_dir: Annotated[Optional[Path], typer.Option(
        "--traffic-dir", help="Where the traffic log is written (default: traffic/ beside the store).")] = None,
    manifest: Annotated[Optional[Path], typer.Option(
        "--manifest", help="Serve exactly what this deployment manifest names (`forge decide --manifest FILE`): "
                           "its host, retriever, fixed arm or checkpoint and weights; refused where the store no "
                           "longer holds it.")] = None,
    engine: EngineOption = DEFAULT_ENGINE,
    address: AddressOption = None,
    replicas: Annotated[Optional[int], typer.Option(
        min=1, help="With --engine ray: Ray Serve replicas of the app behind one ingress (default 2).")] = None,
) -> None:
    """An OpenAI-compatible server: /v1/chat/completions routes and answers each question (the
    Live query path) with only the host calls the decision needs, or under one fixed arm with
    --arm, or under an arm drawn from a mix by the question with --mix, /v1/models, /metrics
    (Prometheus), /health; until Ctrl-C."""
    import uvicorn

    from forge_core.evidence.answering import corpus_name
    from forge_core.server.app import ServeSettings, build_app
    from forge_core.traffic_log import default_traffic_dir

    check_engine(engine, address)
    if replicas is not None and engine != "ray":
        raise InvalidInput("--replicas are Ray Serve replicas: give them with --engine ray")
    store = open_store()
    deployment = None
    if manifest is not None:
        chosen = {"--router": router, "--arm": arm, "--mix": mix, "--host": host, "--retriever": retriever,
                  "--lambda-in": lambda_in, "--lambda-out": lambda_out, "--budget-tokens": budget_tokens,
                  "--budgets": budgets, "--guard": guard,
                  "--guard-fallback": None if guard_fallback == "arm" else guard_fallback}
        deployment, served = _manifest(store, manifest, [flag for flag, value in chosen.items() if value is not None])
        host, retriever, arm, router = served["host"], served["retriever"], served["arm"], served["router"]
        mix, guard, guard_fallback = served.get("mix"), served.get("guard"), served.get("guard_fallback") or "arm"
        lambda_in, lambda_out = served["lambda_in"], served["lambda_out"]
    host = host or "embedded"
    if arm is not None and router is not None:
        raise InvalidInput(f"--arm {arm} serves one fixed arm: --router needs routing (drop one of them)")
    if mix is not None and router is not None:
        raise InvalidInput(f"--mix {mix} serves fixed arms: --router needs routing (drop one of them)")
    router = router or "lite"
    weights = weights_request(lambda_in, lambda_out, budget_tokens, budgets, ratio)
    settings = ServeSettings(host=host, benchmark=corpus_name(benchmark or ["hotpotqa"]), router=router,
                             api_key_env=api_key_env,
                             shadow_raw=shadow_raw, weights=weights, candidate=candidate, candidate_rate=shadow_rate,
                             candidate_max_tokens=shadow_max_tokens, evaluator_host=evaluator_host,
                             traffic_dir=traffic_dir, retriever=chosen_retriever(host, retriever), arm=arm,
                             manifest=deployment, mix=mix, guard=guard, guard_fallback=guard_fallback)
    if arm is None and mix is None and router not in ("lite", "full"):
        warn_if_other_host(store, router, host)
    application = build_app(store, settings)
    if bind != "127.0.0.1":
        console.print(f"[yellow]warning: binding {bind} makes the server reachable beyond this machine"
                      f"{'' if api_key_env else ' without an API key (--api-key-env)'}[/yellow]")
    where = f"traffic log in {traffic_dir or default_traffic_dir()}"
    if engine == "ray":
        from forge_core.server.ray_serve import run_replicas

        count = replicas or DEFAULT_REPLICAS
        console.print(f"FORGE server on http://{bind}:{port}/v1, {count} Ray Serve replicas (host {host}; Ctrl-C to "
                      f"stop); {where}")
        run_replicas(store, settings, count, bind, port, address)
        return
    console.print(f"FORGE server on http://{bind}:{port}/v1 (host {host}; Ctrl-C to stop); {where}")
    uvicorn.run(application, host=bind, port=port, log_level="warning")



def _manifest(store, path: Path, given: list[str]) -> tuple[dict, dict]:
    """The manifest at `path` and what it serves; refused, in one line, beside options that would
    serve something else, or where the store no longer holds what it names."""
    from forge_core.evaluation.manifest import manifest_id, manifest_problems, read_manifest, serve_settings_of

    if given:
        raise InvalidInput(f"--manifest serves exactly what it names: drop {', '.join(given)}")
    deployment = read_manifest(path)
    problems = manifest_problems(store, deployment)
    if problems:
        raise InvalidInput(f"{path} no longer holds in this store ({'; '.join(problems)}): decide again with "
                           f"`forge decide --lambda-in {deployment['lambda_in']:g} --lambda-out "
                           f"{deployment['lambda_out']:g} --manifest {path}`")
    console.print(f"serving {manifest_id(deployment)}: {deployment['sentence']}", highlight=False, soft_wrap=True)
    return deployment, serve_settings_of(deployment)


def weights_request(lambda_in: float | None, lambda_out: float | None, budget_tokens: float | None,
                    budgets: Path | None, ratio: float | None) -> WeightsRequest:
    """The weights asked for on the command line (`forge serve`, `forge extproc`), checked: a
    budget's target and file, or fixed weights that are finite and not negative."""
    from forge_core.server.budget import check_budget, load_budgets_file
    from forge_core.server.deployment import WeightsRequest

    weights = WeightsRequest(lambda_in=lambda_in, lambda_out=lambda_out,
                             budget_tokens=None if budget_tokens is None else check_budget(budget_tokens),
                             budgets=tuple(load_budgets_file(budgets).items()) if budgets else (), ratio=ratio)
    if not weights.budgeted:
        weights.fixed_weights()  # refuses negative or non-finite weights now
    return weights
