"""FORGE as a Ray Serve application built from a Serve config file (`serve deploy FILE`, `serve run
FILE`): the config's `import_path` names `app_builder`, its `args` are `forge serve`'s options by
their names (underscores for dashes), its `http_options` the address and its deployment
`ForgeRouter`'s `num_replicas` the replicas; docs/scale.md shows the file. The settings are checked
when the application is built, before any replica starts, and each replica then builds the same app
as `forge serve --engine ray` does (`ray_serve.ForgeReplica`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forge_core.errors import InvalidInput
from forge_core.server.app import ServeSettings, resolve_models
from forge_core.server.budget import check_budget, load_budgets_file
from forge_core.server.deployment import WeightsRequest
from forge_core.store import Store

TEXT_ARGS = ("host", "router", "arm", "mix", "retriever", "api_key_env", "guard_fallback")  # taken as given
NUMBER_ARGS = ("lambda_in", "lambda_out", "budget_tokens", "ratio", "shadow_raw", "guard")
PATH_ARGS = ("store", "traffic_dir", "budgets")
ARGS = TEXT_ARGS + NUMBER_ARGS + PATH_ARGS + ("benchmark",)


def app_builder(args: Mapping[str, Any]) -> Any:
    """The Serve application of a config file's `args` (`forge serve`'s options; `store`, the store
    file every replica reads, is required): the settings checked here, in one line each, and the
    `ForgeRouter` deployment bound to them (its replicas: the config's `num_replicas`)."""
    from forge_core.server.ray_serve import forge_deployment

    store_path, settings = serve_settings_of_args(args)
    resolve_models(Store(store_path), settings)  # refuses an unknown host, router or arm before any replica starts
    return forge_deployment().bind(str(store_path), settings)


def serve_settings_of_args(args: Mapping[str, Any]) -> tuple[Path, ServeSettings]:
    """The store file and the `ServeSettings` of a config file's `args`, as `forge serve` makes them
    from its options; a one-line error for an unknown argument or a value it would refuse."""
    from forge_core.evidence.answering import corpus_name
    from forge_core.evidence.retrievers import host_default_retriever

    unknown = sorted(set(args) - set(ARGS))
    if unknown:
        raise InvalidInput(f"the FORGE Serve config's args take {', '.join(ARGS)}: not {', '.join(unknown)}")
    if not args.get("store"):
        raise InvalidInput("the FORGE Serve config's args need `store`: the store file every replica reads")
    store_path = Path(str(args["store"])).expanduser()
    if not store_path.is_file():
        raise InvalidInput(f"the FORGE Serve config's store {store_path} is no file on this node")
    text = {name: str(args[name]) for name in TEXT_ARGS if args.get(name) is not None}
    numbers = {name: _number(args, name) for name in NUMBER_ARGS if args.get(name) is not None}
    if "arm" in text and "router" in text:
        raise InvalidInput(f"arm {text['arm']} serves one fixed arm: router needs routing (drop one of them)")
    if "mix" in text and "router" in text:
        raise InvalidInput(f"mix {text['mix']} serves fixed arms: router needs routing (drop one of them)")
    host = text.get("host", "embedded")
    weights = WeightsRequest(lambda_in=numbers.get("lambda_in"), lambda_out=numbers.get("lambda_out"),
                             budget_tokens=check_budget(numbers["budget_tokens"]) if "budget_tokens" in numbers
                             else None,
                             budgets=tuple(load_budgets_file(Path(str(args["budgets"]))).items())
                             if args.get("budgets") else (), ratio=numbers.get("ratio"))
    if not weights.budgeted:
        weights.fixed_weights()  # refuses negative or non-finite weights now
    retriever = text.get("retriever") or host_default_retriever(Store(store_path), host)
    return store_path, ServeSettings(
        host=host, benchmark=corpus_name(_benchmarks(args.get("benchmark"))), router=text.get("router", "lite"),
        api_key_env=text.get("api_key_env"), shadow_raw=numbers.get("shadow_raw", 0.0), weights=weights,
        traffic_dir=Path(str(args["traffic_dir"])).expanduser() if args.get("traffic_dir") else None,
        retriever=retriever, arm=text.get("arm"), mix=text.get("mix"), guard=numbers.get("guard"),
        guard_fallback=text.get("guard_fallback", "arm"))


def _number(args: Mapping[str, Any], name: str) -> float:
    try:
        return float(args[name])
    except (TypeError, ValueError):
        raise InvalidInput(f"the FORGE Serve config's {name} is a number, not {args[name]!r}") from None


def _benchmarks(value: Any) -> list[str]:
    """A YAML list or a comma-separated text (as `serve run ... benchmark=a,b` passes it); hotpotqa
    when not given."""
    if value is None:
        return ["hotpotqa"]
    names = value if isinstance(value, list) else str(value).split(",")
    return [str(name).strip() for name in names if str(name).strip()] or ["hotpotqa"]
