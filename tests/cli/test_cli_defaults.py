"""A knob is declared once: every `forge` option default equals the default of the request or
config field it feeds (for the commands that build `TrainRequest`, `EnumerationPlan`, `JudgeRequest`,
`CalibrationRequest`, `EvaluationSettings` and `RewardAuditRequest`, every option is accounted for),
and the command line starts without importing torch, sklearn or scipy (it reads its defaults from the
torch-free settings and request modules)."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from typing import Any

import pytest
import typer

from forge_core.cli import app
from forge_core.enumeration.batch_api import run_batches
from forge_core.enumeration.planning import EnumerationPlan, parse_shard
from forge_core.evaluation.audit_request import RewardAuditRequest
from forge_core.evaluation.cached import CachedRequest, SweepRequest
from forge_core.evaluation.calibration import CalibrationRequest
from forge_core.evaluation.crossfit import CrossfitSettings
from forge_core.evaluation.fresh_online import FreshRequest
from forge_core.evaluation.settings import EvaluationSettings
from forge_core.evaluation.transfer import TransferRequest
from forge_core.evidence.retrievers import RetrieverConfig
from forge_core.hosts.base import HostConfig
from forge_core.rewards.judge_request import JudgeRequest
from forge_core.routing.conditioning import CostConditioning
from forge_core.training.request import TrainRequest

EVALUATION = {"host": "host", "split": "split", "arms": "n_arms", "lambda_in": "weights.lambda_in",
              "lambda_out": "weights.lambda_out", "policy": "policy_names", "benchmark": "benchmarks",
              "split_seed": "split_seed", "accounting": "accounting"}
IN_SETTINGS = {option: f"settings.{path}" for option, path in EVALUATION.items()}  # a request holding settings
JUDGING = {"host": "host", "judge_host": "judge_host", "benchmark": "benchmarks", "split": "split", "limit": "limit",
           "arms": "n_arms", "concurrency": "concurrency", "split_seed": "split_seed"}

# command -> (the dataclass its options feed, {option: the field's dotted path})
FED_FIELDS: dict[tuple[str, ...], tuple[type, dict[str, str]]] = {
    ("train",): (TrainRequest, {
        "stage": "stage", "variant": "variant", "arms": "n_arms", "host": "host", "lambda_in": "lambda_in",
        "lambda_out": "lambda_out", "rewards": "rewards", "reward": "reward", "stage2_reward": "stage2_reward",
        "router_kind": "router_kind", "split_seed": "split_seed",
        "tau": "stage1.tau", "target": "stage1.target",
        "max_epochs": "stage1.max_epochs", "patience": "stage1.patience", "seed": "stage1.seed",
        "algorithm": "stage2.loss_type", "steps": "stage2.steps", "beta": "stage2.beta",
        "entropy_coef": "stage2.entropy_coef", "log_every": "stage2.log_every", "parent": "parent",
        "benchmark": "benchmarks"}),
    ("features",): (TrainRequest, {"host": "host"}),
    ("eval", "crossfit"): (CrossfitSettings, {
        "host": "host", "arms": "n_arms", "lambda_in": "lambda_in", "lambda_out": "lambda_out", "folds": "folds",
        "stage": "stage", "stage2_steps": "stage2.steps", "split_seed": "split_seed", "accounting": "accounting"}),
    ("eval", "cached"): (CachedRequest, {"repeats": "repeats"} | IN_SETTINGS),
    ("eval", "fresh"): (FreshRequest, {"per_benchmark": "per_benchmark"} | IN_SETTINGS),
    ("eval", "transfer"): (TransferRequest, {
        "split": "split", "arms": "n_arms", "lambda_in": "weights.lambda_in", "lambda_out": "weights.lambda_out",
        "split_seed": "split_seed", "calibration_split": "calibration_split", "accounting": "accounting"}),
    ("eval",): (EvaluationSettings, {option: path for option, path in EVALUATION.items() if option != "split"}),
    ("sweep",): (SweepRequest, {option: path for option, path in IN_SETTINGS.items()
                                if option not in ("lambda_in", "lambda_out", "split_seed")}),
    ("calibrate",): (CalibrationRequest, {
        "budget_tokens": "budget_tokens", "min_f1": "min_f1", "ratio": "ratio", "variant": "variant", "host": "host",
        "folds": "folds", "split_seed": "split_seed", "accounting": "accounting"}),
    ("rewards", "judge"): (JudgeRequest, JUDGING),
    ("rewards", "support"): (JudgeRequest, JUDGING),
    ("rewards", "audit"): (RewardAuditRequest, {
        "reward": "reward", "host": "host", "arms": "n_arms", "lambda_in": "weights.lambda_in",
        "lambda_out": "weights.lambda_out", "folds": "folds", "judge_key": "judge_key", "grid": "grid"}),
    ("enumerate",): (EnumerationPlan, {
        "split": "split", "arms": "n_arms", "probes": "probes", "limit": "limit", "per_benchmark": "per_benchmark",
        "max_calls": "max_calls", "max_tokens": "max_tokens", "split_seed": "split_seed",
        "allow_unchecked_depths": "allow_unchecked_depths", "queries_of": "queries_of", "budget_usd": "budget_usd"}),
    ("host", "add"): (HostConfig, {  # --concurrency is None: the kind's default (`registry.new_host_config`)
        "thinking": "thinking", "api_key_env": "api_key_env", "budget_forcing": "budget_forcing"}),
    ("retriever", "add"): (RetrieverConfig, {
        "kind": "kind", "k": "k", "raw_words": "raw_words", "summary_words": "summary_words", "fusion_k": "fusion_k",
        "url": "url", "timeout": "timeout_s", "retries": "retries", "api_key_env": "api_key_env"}),
}


# the request commands' options that feed no field's default, each for a reason (checked below or none to check);
# every command's --retriever is None: the host's default retriever, else the fields' bm25 (the test below)
NOT_FIELD_DEFAULTS: dict[tuple[str, ...], set[str]] = {
    ("train",): {"weight_range",  # CostConditioning's range (the test below)
                 "warm_arms", "draws",  # None: the recommended recipe's (`forge recipes`; tests/cli/test_cli_decide.py)
                 "conditioned", "as_json"},  # whether to condition
    ("features",): {"as_json"},
    ("enumerate",): {"shard", "poll_seconds",  # parsed or run elsewhere (the test below)
                     "host",  # a plan always names its host (no default)
                     "benchmark", "concurrency",  # None: the imported benchmarks; the host's own (`concurrency_for`)
                     "processes", "estimate", "to_batch", "from_batch", "requests", "batch",
                     "engine", "address",  # where the plan runs (forge_core.engines), not what it is
                     "as_json"},  # how to run the plan, not what it is
    ("rewards", "judge"): {"as_json"},
    ("rewards", "support"): {"as_json"},
    ("calibrate",): {"as_json"},
    ("eval",): {"protocol", "split", "repeats", "per_benchmark", "folds", "stage",  # the older spelling: None
                "stage2_steps", "warm_arms", "as_json"},  # or False, the protocol subcommand's default (checked there)
    ("eval", "cached"): {"as_json"},
    ("eval", "crossfit"): {"warm_arms",  # None: the recommended recipe's (`forge recipes`)
                           "engine", "address",  # where the folds run (forge_core.engines), not what they are
                           "as_json"},
    ("eval", "fresh"): {"as_json"},
    ("eval", "transfer"): {"source", "target",  # required (no default)
                           "calibrate", "as_json"},  # None: no calibration, the field's ()
    ("sweep",): {"lambda_in", "lambda_out",  # the grid: the CLI's own (a request always names its grid)
                 "as_json"},
    ("rewards", "audit"): {"router", "stage2_steps",  # None: the field's default
                           "no_crossfit", "as_json"},  # no routers; how to print
}


def option_defaults(path: tuple[str, ...]) -> dict[str, Any]:
    """The default of every option of `forge <path>`, as the parser holds it."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {param.name: param.default for param in command.params}


def field_default(cls: type, dotted: str) -> Any:
    """The default of a (possibly nested) dataclass field, e.g. `stage2.steps` of `CrossfitSettings`."""
    head, _, rest = dotted.partition(".")
    field = {field.name: field for field in dataclasses.fields(cls)}[head]
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    for name in rest.split(".") if rest else ():
        value = getattr(value, name)
    return value


def as_field(option: Any, field: Any) -> Any:
    """An option's default as its field's type: a grid option (comma-separated values, as `forge eval
    crossfit --lambda-in 0.1,0.6`) holds its default as text."""
    if isinstance(option, str) and isinstance(field, int | float) and not isinstance(field, bool):
        return type(field)(option)
    return option


@pytest.mark.parametrize("path", FED_FIELDS, ids=" ".join)
def test_option_defaults_equal_the_fields_they_feed(path: tuple[str, ...]) -> None:
    cls, fields = FED_FIELDS[path]
    defaults = option_defaults(path)
    assert set(fields) <= set(defaults), f"forge {' '.join(path)} has no option {set(fields) - set(defaults)}"
    disagree = {option: (defaults[option], field_default(cls, dotted)) for option, dotted in fields.items()
                if as_field(defaults[option], field_default(cls, dotted)) != field_default(cls, dotted)}
    assert not disagree, f"forge {' '.join(path)}: option default vs {cls.__name__} field: {disagree}"


@pytest.mark.parametrize("path", NOT_FIELD_DEFAULTS, ids=" ".join)
def test_every_option_of_a_request_command_is_accounted_for(path: tuple[str, ...]) -> None:
    """A new option of `forge train`, `enumerate`, `rewards judge|support|audit`, `calibrate`, `eval`
    or `sweep` is either checked against the field it feeds or named above with its reason."""
    options, fed = set(option_defaults(path)), set(FED_FIELDS[path][1])
    assert fed & NOT_FIELD_DEFAULTS[path] == set()
    unchecked = options - fed - NOT_FIELD_DEFAULTS[path] - {"retriever"}
    assert unchecked == set(), f"forge {' '.join(path)}: options whose default nothing checks: {unchecked}"


@pytest.mark.parametrize("path", NOT_FIELD_DEFAULTS, ids=" ".join)
def test_every_retriever_option_defaults_to_the_hosts_retriever_else_the_fields_bm25(
        path: tuple[str, ...], tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from forge_core.cli.output import chosen_retriever
    from forge_core.evidence.retrievers import save_retriever_config, set_host_default_retriever
    from forge_core.store import Store

    assert option_defaults(path)["retriever"] is None
    monkeypatch.setenv("FORGE_STORE", str(tmp_path / "forge.duckdb"))
    assert chosen_retriever("embedded", None) == EvaluationSettings.retriever == TrainRequest.retriever
    save_retriever_config(Store(tmp_path / "forge.duckdb"), RetrieverConfig("k4", k=4))
    set_host_default_retriever(Store(tmp_path / "forge.duckdb"), "embedded", "k4")
    assert (chosen_retriever("embedded", None), chosen_retriever("embedded", "bm25")) == ("k4", "bm25")
    assert chosen_retriever("another-host", None) == "bm25"


def test_option_defaults_of_the_other_fed_values() -> None:
    """What the mapped dataclasses cannot say: the seed feeds both stages, the trained weight range
    the cost conditioning, the shard and the poll interval their parsers and runners."""
    train = option_defaults(("train",))
    assert train["seed"] == field_default(TrainRequest, "stage2.seed")
    assert tuple(train["weight_range"]) == (CostConditioning.low, CostConditioning.high)
    enumerate_ = option_defaults(("enumerate",))
    assert parse_shard(enumerate_["shard"]) == field_default(EnumerationPlan, "shard")
    assert enumerate_["poll_seconds"] == inspect.signature(run_batches).parameters["poll_seconds"].default


def test_forge_help_imports_no_torch_sklearn_or_scipy() -> None:
    code = ("import sys\nfrom forge_core.cli import app\n"
            "try:\n    app(['--help', ], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print('imported:', *sorted(m for m in ('torch', 'sklearn', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
    assert done.stdout.splitlines()[-1] == "imported:"
