"""Real browser, the Traffic page on a small traffic log written beforehand by the server's own
`TrafficLog` (a budget whose controller sits at the router's lowest weights, shadow Always-Raw and
candidate records): every element the deployment issue lists is drawn, no exception, and a
costliest request opens its record."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from forge_core.records import ArmOutcome
from forge_core.store import Store
from forge_core.traffic_log import TrafficLog

from support.browser import STARTUP_TIMEOUT_S, browser_page, require_browser, running_dashboard

pytestmark = pytest.mark.e2e  # a real browser: scripts/test.sh runs the e2e tests after the default suite

HEADINGS = ("Requests over time", "Arm mix over time", "Realized tokens against the target",
            "Weights in force over time", "Saving against Always-Raw", "Candidate against the current router",
            "Slowest and costliest requests")
TARGET = 400.0


def write_log(folder: Path) -> None:
    """60 answered requests of the default budget (every third on raw, the costliest 627 tokens),
    their shadow records, and a refused request."""
    log = TrafficLog(folder)
    for i in range(60):
        arm, tokens = ("raw:no_think", 570 + i) if i % 3 == 0 else ("direct:no_think", 80 + i)
        request_id = f"req{i:04d}"
        log.append({"kind": "request", "id": request_id, "time": 1_800_000_000.0 + 2 * i, "endpoint": "chat",
                    "client": "team-a", "model": "forge", "router": "ckpt-x", "budget": "default",
                    "budget_target": TARGET, "budget_bound": "lowest" if i > 20 else None,
                    "lambda_in": max(0.02, 0.1 - 0.004 * i), "lambda_out": max(0.04, 0.2 - 0.008 * i),
                    "status": 200, "arm": arm, "margin": 0.1, "tokens": tokens, "tokens_in": tokens - 6,
                    "tokens_out": 6, "host_calls": 1, "latency_ms": 20.0 + i, "question": f"question {i}"})
        if i % 4 == 0:
            log.append({"kind": "shadow", "id": request_id, "time": 1_800_000_001.0 + 2 * i, "shadow": "raw",
                        "raw_tokens": 620, "saving": 620 - tokens, "calls": 1, "tokens_spent": 620})
        if i % 5 == 0:
            agree = i % 10 == 0
            log.append({"kind": "shadow", "id": request_id, "time": 1_800_000_001.5 + 2 * i, "shadow": "candidate",
                        "served_arm": arm, "candidate_arm": arm if agree else "summary:no_think", "agree": agree,
                        "served_tokens": tokens, "status": "agree" if agree else "answered",
                        "calls": 0 if agree else 1, "tokens_spent": 0 if agree else 300,
                        "candidate_tokens": tokens if agree else 300})
    log.append({"kind": "request", "id": "refused", "time": 1_800_000_200.0, "endpoint": "chat", "client": "x",
                "status": 401, "tokens": 0, "latency_ms": 1.0})
    log.close()


def store_with_an_outcome(path: Path) -> Store:
    """A store holding one arm outcome: `forge app` then skips its first-run demo load."""
    store = Store(path)
    now = datetime.now(timezone.utc)
    store.write_arm_outcome(ArmOutcome(host="traffic-test", benchmark="musique", example_id="q1", arm="direct:no_think",
                                       answer="a", extracted="a", f1=1.0, em=1.0, tokens_in=10, tokens_out=2,
                                       tokens_reasoning=0, latency_ms=1.0, error=None, attempts=1,
                                       host_config_hash="h", started_at=now, finished_at=now))
    return store


def test_the_traffic_page_draws_every_element_and_opens_a_record(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import expect

    require_browser()
    write_log(tmp_path / "traffic")
    monkeypatch.setenv("FORGE_TRAFFIC_DIR", str(tmp_path / "traffic"))
    store = store_with_an_outcome(tmp_path / "store.duckdb")
    with running_dashboard(store.path, tmp_path / "app.log") as url, browser_page() as page:
        page.set_viewport_size({"width": 1280, "height": 1000})
        page.goto(f"{url}/traffic")
        timeout = STARTUP_TIMEOUT_S * 1000
        for heading in HEADINGS:
            expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=timeout)
        metrics = page.get_by_test_id("stMetric")
        expect(metrics.filter(has_text="Requests").get_by_test_id("stMetricValue").first).to_have_text("61")
        for label in ("Tokens saved a request (shadow sample)", "Agreement with the current router",
                      "Candidate minus current tokens"):
            expect(metrics.filter(has_text=label)).to_be_visible()
        expect(page.get_by_text("against a target of 400.0")).to_be_visible()
        expect(page.get_by_text("Out of the router's reach")).to_be_visible()
        expect(page.get_by_text("saving", exact=False).filter(has_text="95% interval").first).to_be_visible()
        charts = page.locator("[data-testid='stVegaLiteChart'], [data-testid='stArrowVegaLiteChart']")
        expect(charts).to_have_count(4, timeout=timeout)
        page.wait_for_timeout(6000)  # past a Follow re-read (every 5 s): the choice below must still be offered
        page.get_by_test_id("stRadio").get_by_text("costliest").first.click()
        expect(page.get_by_test_id("stJson")).to_contain_text("req0057", timeout=timeout)  # 627 tokens: the costliest
        expect(page.get_by_test_id("stJson")).to_contain_text("shadows")
        assert page.get_by_test_id("stException").count() == 0
