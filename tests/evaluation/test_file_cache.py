"""cached_file: computed once, written atomically, read back after."""

from __future__ import annotations

import json

from forge_core.evaluation.file_cache import cached_file


def test_a_result_is_computed_once_and_read_back(tmp_path) -> None:
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"value": 3}

    path = tmp_path / "deeper" / "result.v1.json"
    read, write = (lambda file: json.loads(file.read_text())), (lambda file, value: file.write_text(json.dumps(value)))
    assert cached_file(path, compute, read, write) == {"value": 3}
    assert cached_file(path, compute, read, write) == {"value": 3} and calls == [1]
    assert [file.name for file in path.parent.iterdir()] == ["result.v1.json"]  # no partial file left
