"""The Serve config file docs/scale.md shows deploys the FORGE app: `serve run --non-blocking` of that
block (its store, traffic folder, host, router, benchmark and port the test's), two replicas behind
Serve's ingress answering through the `openai` client, one traffic record per request."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forge_core.hosts.base import HostConfig
from forge_core.hosts.registry import save_host_config
from forge_core.server.ray_serve import APP_NAME, wait_until_loaded
from forge_core.store import Store
from forge_core.traffic_log import read_traffic

from support.counting_host import CountingHost, replay_questions
from support.resources import require_module
from support.stores import copy_store

pytestmark = pytest.mark.e2e  # a local Ray cluster: scripts/test.sh runs the e2e tests after the default suite

openai = require_module("openai", "the openai client is a test extra: pip install -e '.[test]'")
yaml = require_module("yaml", "PyYAML comes with Ray: pip install 'forge-core[ray]'")
SCALE_DOC = Path(__file__).resolve().parents[2] / "docs" / "scale.md"
PROXY_WAIT_RAN_OUT = "HTTP proxies not available after"  # Serve's own message, when its 60 s ran out


def documented_config() -> dict:
    """The one YAML block of docs/scale.md, parsed."""
    [block] = re.findall(r"```yaml\n(.*?)```", SCALE_DOC.read_text(), flags=re.DOTALL)
    return yaml.safe_load(block)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_run(address: str, config: Path) -> subprocess.CompletedProcess:
    """`serve run --non-blocking` of the config file, run again once (as docs/scale.md tells a user)
    when Serve's fixed 60 s wait for its HTTP proxy ran out on a busy machine."""
    command = [str(Path(sys.executable).with_name("serve")), "run", "--non-blocking", "--address", address,
               str(config)]
    deployed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if deployed.returncode != 0 and PROXY_WAIT_RAN_OUT in deployed.stderr:
        deployed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return deployed


def running_replicas(app: str, deployment: str, timeout_s: float = 600.0) -> dict[str, int]:
    """The deployment's replica states once Serve calls the application running (every replica
    started) or failed; none within `timeout_s` fails the test."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = serve.status().applications.get(app)
        if status is not None and status.status in ("RUNNING", "DEPLOY_FAILED"):
            assert status.status == "RUNNING", status.message
            return status.deployments[deployment].replica_states
        time.sleep(1.0)
    raise AssertionError(f"Serve did not run {app} within {timeout_s:.0f} s")


def test_the_documented_serve_config_deploys_the_forge_app(conditioned_store: tuple[Store, str], ray_local,
                                                            tmp_path: Path) -> None:
    from ray import serve

    config = documented_config()
    [application] = config["applications"]
    [deployment] = application["deployments"]
    with CountingHost() as host:
        store = copy_store(conditioned_store[0], tmp_path / "store")
        save_host_config(store, HostConfig(name="counting", kind="openai", model="m", base_url=host.base_url,
                                           max_retries=0, timeout_s=10.0))
        application["args"] |= {"store": str(store.path), "traffic_dir": str(tmp_path / "traffic"),
                                "host": "counting", "router": conditioned_store[1], "benchmark": "musique"}
        port = config["http_options"]["port"] = free_port()
        (tmp_path / "forge-serve.yaml").write_text(yaml.safe_dump(config))
        serve.shutdown()  # Serve keeps the port it was first started on: start it from the file
        try:
            deployed = serve_run(ray_local.get_runtime_context().gcs_address, tmp_path / "forge-serve.yaml")
            assert deployed.returncode == 0, deployed.stderr
            replicas = running_replicas(application["name"], deployment["name"])
            wait_until_loaded(f"http://127.0.0.1:{port}", deployment["num_replicas"])
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
            questions = replay_questions(store, 20)
            answers = [client.chat.completions.create(model="forge", messages=[{"role": "user", "content": q}])
                       for q in questions]
        finally:
            serve.shutdown()
    assert application["name"] == APP_NAME and replicas == {"RUNNING": deployment["num_replicas"]}
    assert all(answer.choices[0].message.content for answer in answers)
    answered = [r for r in read_traffic(tmp_path / "traffic").requests if r["status"] == 200]
    assert len(answered) == len({r["id"] for r in answered}) == len(questions)
    assert sorted(r["tokens"] for r in answered) == sorted(a.usage.total_tokens for a in answers)
