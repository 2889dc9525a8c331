"""`forge host add --thinking`, `forge host list --json`, `forge host check` and the 12-arm refusal of
`forge enumerate`, in this process, against a local vLLM-format thinking double."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from forge_core import cli
from forge_core.store import Store

from support.stores import copy_store
from support.thinking_server import Engine, ThinkingServer


@pytest.fixture
def store(imported_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    copied = copy_store(imported_store, tmp_path)
    monkeypatch.setenv("FORGE_STORE", str(copied.path))
    return copied


def forge(arguments: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """`forge ARGUMENTS` in this process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["forge", *arguments])
    try:
        cli.main()
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_vllm_host_is_added_checked_and_then_enumerated_on_twelve_arms(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    with ThinkingServer(Engine("vllm", natural_reasoning=600)) as server:
        code, _, _ = forge(["host", "add", "h", "--kind", "openai", "--base-url", server.base_url, "--model", "m",
                            "--thinking", "vllm"], monkeypatch, capsys)
        assert code == 0
        _, out, _ = forge(["host", "list", "--json"], monkeypatch, capsys)
        no_think = json.loads(out)["hosts"]["h"]["depth_map"]["depths"]["no_think"]["fields"]
        assert no_think["chat_template_kwargs"] == {"enable_thinking": False}

        twelve = ["enumerate", "--host", "h", "--arms", "12", "--benchmark", "musique", "--limit", "1", "--json"]
        code, _, err = forge(twelve, monkeypatch, capsys)
        assert code == 2 and "no depth check for this configuration: run `forge host check h`" in err

        code, out, _ = forge(["host", "check", "h", "--questions", "2", "--json"], monkeypatch, capsys)
        report = json.loads(out)
        assert code == 0 and [row["verdict"] for row in report["depths"]] == ["honoured"] * 4
        assert [row["reasoning_median"] for row in report["depths"]] == [0, 0, 600, 600]

        code, out, _ = forge(twelve, monkeypatch, capsys)
        assert code == 0 and json.loads(out)["calls"] == 12
    outcomes = store.arm_outcomes("h").set_index("arm")
    assert outcomes.loc["raw:think_high", "tokens_reasoning"] == 600
    assert outcomes.loc["raw:think_high", "tokens_out"] == 601  # reasoning is charged as output
    assert outcomes.loc["raw:think_high", "reasoning_method"] == "estimated"
    assert outcomes.loc["raw:no_think", "tokens_reasoning"] == 0


def test_a_failed_check_refuses_twelve_arms_unless_overridden(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    with ThinkingServer(Engine("vllm", honours_budget=False)) as server:
        forge(["host", "add", "h", "--base-url", server.base_url, "--model", "m", "--thinking", "vllm"],
              monkeypatch, capsys)
        code, _, _ = forge(["host", "check", "h", "--questions", "1"], monkeypatch, capsys)
        assert code == 0
        twelve = ["enumerate", "--host", "h", "--arms", "12", "--benchmark", "musique", "--limit", "1", "--json"]
        code, _, err = forge(twelve, monkeypatch, capsys)
        assert code == 2 and "found think_low ignored, think_high ignored" in err
        code, out, _ = forge([*twelve, "--allow-unchecked-depths"], monkeypatch, capsys)
        assert code == 0 and json.loads(out)["calls"] == 12


@pytest.mark.slow
def test_twelve_arms_run_end_to_end_on_a_thinking_double(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Check, 12-arm enumeration with probes, Stage 1, Stage 2 and cached evaluation (about 30 s)."""
    with ThinkingServer(Engine("vllm", natural_reasoning=600)) as server:
        forge(["host", "add", "h", "--base-url", server.base_url, "--model", "m", "--thinking", "vllm"],
              monkeypatch, capsys)
        assert forge(["host", "check", "h", "--questions", "1"], monkeypatch, capsys)[0] == 0
        for split, queries in (("train", 16), ("dev", 8), ("test", 8)):
            code, out, _ = forge(["enumerate", "--host", "h", "--arms", "12", "--benchmark", "musique", "--split",
                                  split, "--per-benchmark", str(queries), "--probes", "--json"], monkeypatch, capsys)
            assert code == 0 and json.loads(out)["errors"] == 0
    train = ["train", "--host", "h", "--arms", "12", "--variant", "lite", "--json"]
    code, out, _ = forge([*train, "--max-epochs", "2"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["metrics"]["train_queries"] == 16
    code, out, _ = forge([*train, "--stage", "2", "--steps", "4", "--log-every", "2"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["stage"] == 2
    code, out, _ = forge(["eval", "--host", "h", "--arms", "12", "--json"], monkeypatch, capsys)
    report = json.loads(out)
    assert code == 0 and len(report["arms"]) == 12 and report["queries"] == 8
    assert {"forge_lite", "forge_full", "oracle"} <= set(report["policies"])
    reasoning = store.reasoning_by_arm("h").set_index("arm")
    assert reasoning.loc["raw:think_low", "tokens_reasoning"] == 600
    assert reasoning.loc["raw:cot", "tokens_reasoning"] == 0
    assert set(store.probe_outcomes("h")["tokens_reasoning"]) == {0}


def test_an_embedded_model_is_added_under_a_name_of_its_own(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from forge_core.hosts.base import HostConfig
    from forge_core.hosts.registry import BUILTIN_HOSTS, config_hash, get_host_config

    code, _, err = forge(["host", "add", "tiny-apart", "--kind", "embedded", "--model", "smollm2-135m"],
                         monkeypatch, capsys)
    assert code == 0, err
    added = get_host_config(store, "tiny-apart")
    assert added.kind == "embedded" and config_hash(added) == config_hash(BUILTIN_HOSTS["embedded-tiny"])
    assert added.timeout_s == BUILTIN_HOSTS["embedded"].timeout_s  # a CPU answer can take minutes
    assert added.max_concurrency == BUILTIN_HOSTS["embedded"].max_concurrency  # and two cores serve two at once
    code, _, err = forge(["host", "add", "remote", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
                         monkeypatch, capsys)
    assert code == 0 and get_host_config(store, "remote").max_concurrency == HostConfig.max_concurrency, err

    code, out, err = forge(["host", "add", "x", "--kind", "embedded", "--model", "gpt-9"], monkeypatch, capsys)
    assert code == 2 and "an embedded host runs one of" in out + err
    code, out, err = forge(["host", "add", "x", "--kind", "embedded", "--model", "smollm2-135m",
                            "--base-url", "http://127.0.0.1:9/v1"], monkeypatch, capsys)
    assert code == 2 and "leave out --base-url" in out + err
