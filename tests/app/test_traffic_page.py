"""The Traffic page on a traffic log written by the server's own `TrafficLog` (answered requests of
a budget, a refused one, shadow records): metrics, charts, the budget's target, the shadow figures,
and a costliest request opened."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from forge_core.traffic_log import TrafficLog

PAGE = Path(__file__).resolve().parents[2] / "pages" / "traffic.py"


def write_log(folder: Path) -> None:
    log = TrafficLog(folder)
    for i in range(30):
        arm, tokens = ("raw:no_think", 600 + i) if i % 3 == 0 else ("direct:no_think", 80 + i)
        log.append({"kind": "request", "id": f"req{i:04d}", "time": 1_800_000_000.0 + 5 * i, "endpoint": "chat",
                    "client": "team-a", "model": "forge", "budget": "default", "budget_target": 250.0,
                    "lambda_in": 0.1 + 0.01 * i, "lambda_out": 0.2 + 0.02 * i, "status": 200, "arm": arm,
                    "margin": 0.1, "tokens": tokens, "host_calls": 1, "latency_ms": 20.0 + i})
        log.append({"kind": "shadow", "id": f"req{i:04d}", "time": 1_800_000_001.0 + 5 * i, "shadow": "raw",
                    "raw_tokens": 620, "saving": 620 - tokens, "calls": 1, "tokens_spent": 620})
    log.append({"kind": "request", "id": "refused", "time": 1_800_000_200.0, "endpoint": "chat", "client": "x",
                "status": 401, "tokens": 0, "latency_ms": 1.0})
    log.close()


def test_the_page_shows_the_traffic_and_opens_the_costliest_request(tmp_path: Path) -> None:
    write_log(tmp_path)
    app = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not app.exception, app.exception
    app.text_input[0].set_value(str(tmp_path)).run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Requests"] == "31"
    assert metrics["Tokens a request"] == f"{sum((600 + i) if i % 3 == 0 else (80 + i) for i in range(30)) / 30:.1f}"
    assert "Tokens saved a request (shadow sample)" in metrics
    assert [s.value for s in app.subheader][:3] == ["Requests over time", "Arm mix over time",
                                                   "Realized tokens against the target"]
    opened = app.radio[0]
    costliest = [option for option in opened.options if option.endswith("costliest")][0]
    assert costliest.startswith("req0027")
    opened.set_value(costliest).run()
    assert '"req0027"' in app.json[0].value and '"shadows"' in app.json[0].value


def test_the_page_says_how_to_start_without_traffic(tmp_path: Path) -> None:
    app = AppTest.from_file(str(PAGE), default_timeout=60).run()
    app.text_input[0].set_value(str(tmp_path / "none")).run()
    assert not app.exception and "forge serve" in app.info[0].value
