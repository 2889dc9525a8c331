"""`forge data` commands end to end: real import, stats JSON, clear errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FORGE = [sys.executable, "-m", "forge_core.cli"]


def forge(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGE, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_import_then_stats_json(benchmarks_root: Path) -> None:
    assert forge("data", "import", "--benchmarks-dir", str(benchmarks_root)).returncode == 0
    result = forge("data", "stats", "--json")
    stats = json.loads(result.stdout)["benchmarks"]
    assert stats["hotpotqa"] == {"examples": 1700, "documents": stats["hotpotqa"]["documents"],
                                 "splits": {"train": 1108, "dev": 370, "test": 222}}
    assert stats["2wikimultihopqa"]["splits"] == {"train": 90, "dev": 33, "test": 30}
    assert {k: v["examples"] for k, v in stats.items()} == {
        "2wikimultihopqa": 153, "fever": 9000, "hotpotqa": 1700, "musique": 350, "popqa": 2500}
    second = forge("data", "import", "--benchmarks-dir", str(benchmarks_root))
    assert "unchanged" in second.stderr and "imported)" not in second.stderr
    assert json.loads(forge("data", "stats", "--json").stdout)["benchmarks"] == stats


def test_malformed_file_is_one_line_error(tmp_path: Path, benchmarks_root: Path) -> None:
    for spec_dir in ("hotpotqa", "2wikimultihopqa", "musique", "popqa", "fever"):
        (tmp_path / spec_dir).mkdir()
    (tmp_path / "hotpotqa" / "hotpotqa_distractor_1700.jsonl").write_text('{"id": "x", "question": "Q"\n')
    result = forge("data", "import", "--benchmarks-dir", str(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "hotpotqa_distractor_1700.jsonl:1: malformed JSON" in result.stderr.replace("\n", "")


def test_missing_directory_and_env_override(tmp_path: Path) -> None:
    result = forge("data", "import", env={"FORGE_BENCHMARKS_DIR": str(tmp_path / "nowhere")})
    assert result.returncode == 2
    assert "not found" in result.stderr and "Traceback" not in result.stderr


def test_stats_on_empty_store_says_what_to_do() -> None:
    result = forge("data", "stats")
    assert result.returncode == 0
    assert "forge data import" in result.stderr
