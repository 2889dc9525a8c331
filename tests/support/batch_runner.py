"""A test double of a batch engine (what `vllm run-batch` or a provider's Batch API worker does):
runs an OpenAI batch input file against an OpenAI-compatible server, one line at a time in file
order, and writes OpenAI batch output lines (`{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error"}`)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx


def run_batch_file(requests_path: Path, results_path: Path, base_url: str) -> int:
    """Post every line's body to `base_url` (which ends in /v1, as the line's url begins) and write
    the results; returns the number of lines run."""
    root = base_url.removesuffix("/").removesuffix("/v1")
    lines = [json.loads(text) for text in requests_path.read_text().splitlines() if text.strip()]
    with httpx.Client(timeout=300.0) as client, open(results_path, "w") as results:
        for number, line in enumerate(lines):
            reply = client.post(root + line["url"], json=line["body"])
            results.write(json.dumps({
                "id": f"batch_req_{number}", "custom_id": line["custom_id"], "error": None,
                "response": {"status_code": reply.status_code, "request_id": f"req_{number}", "body": reply.json()},
            }) + "\n")
    return len(lines)
