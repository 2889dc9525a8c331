"""A test double of the providers' batch endpoints on 127.0.0.1: OpenAI's Batch API (`/v1/files`,
`/v1/batches`, `/v1/files/{id}/content`, cancel) and Anthropic's Message Batches
(`/v1/messages/batches`, its results URL, cancel).

A batch advances one step per status request: `in_progress` with half its requests done, then
ended. Each request is answered like `AnsweringServer` answers ("answer <hash>", prompt tokens
from the prompt's size, 2 out). Scripted behaviours: `rate_limited_creates` (that many creates
answered 429 with `Retry-After: 0` first), `failing` (custom ids, or Anthropic ids, answered with
an error line), `expire_after` (the batch expires with only that many requests done),
`refuse_input` (an OpenAI batch ends as `failed`, its input refused), `broken_downloads` (that
many result downloads answered 500), `tokenize` (serve vLLM's `POST /tokenize`, counting prompts as
its answers' usage does). It records every create and the authorization headers it saw.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer


class BatchApiServer(LocalHttpServer):
    """OpenAI and Anthropic batch endpoints over scripted, instant answers."""

    def __init__(self, rate_limited_creates: int = 0, failing: frozenset[str] = frozenset(),
                 expire_after: int | None = None, refuse_input: bool = False, broken_downloads: int = 0,
                 tokenize: bool = False) -> None:
        self.tokenize = tokenize
        self.rate_limited_creates = rate_limited_creates
        self.failing = failing
        self.expire_after = expire_after
        self.refuse_input = refuse_input
        self.broken_downloads = broken_downloads
        self.files: dict[str, str] = {}  # file id -> content
        self.batches: dict[str, dict[str, Any]] = {}  # batch id -> {"provider", "lines", "polls", "cancelled"}
        self.creates = 0  # batches created
        self.create_attempts = 0  # create requests, 429s included
        self.authorizations: set[str] = set()  # Authorization / x-api-key header values seen
        self.lock = threading.Lock()
        self._listen()

    # ---------------------------------------------------------------- answers

    @staticmethod
    def completion(body: dict[str, Any]) -> dict[str, Any]:
        prompt = json.dumps(body["messages"]) + json.dumps(body.get("system", ""))
        text = "answer " + hashlib.sha1(prompt.encode()).hexdigest()[:8]
        return {"text": text, "prompt_tokens": len(prompt) // 4, "completion_tokens": 2}

    def _done(self, batch: dict[str, Any]) -> int:
        total = len(batch["lines"])
        if batch["polls"] <= 1 or batch["cancelled"]:  # a cancelled batch keeps what it had done
            return total // 2
        return min(total, self.expire_after) if self.expire_after is not None else total

    def _status(self, batch: dict[str, Any]) -> str:
        if batch["polls"] <= 1 and not batch["cancelled"]:
            return "in_progress"
        if batch["cancelled"]:
            return "cancelled" if batch["provider"] == "openai" else "ended"
        if self.expire_after is not None:
            return "expired" if batch["provider"] == "openai" else "ended"
        return "completed" if batch["provider"] == "openai" else "ended"

    # ---------------------------------------------------------------- OpenAI

    def openai_create(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        content = self.files[payload["input_file_id"]]
        lines = [json.loads(line) for line in content.splitlines() if line.strip()]
        return 200, self._new_batch("openai", lines)

    def _new_batch(self, provider: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
        with self.lock:
            self.creates += 1
            batch_id = f"batch_{self.creates}"
            self.batches[batch_id] = {"provider": provider, "lines": lines, "polls": 0, "cancelled": False}
        return self._view(batch_id, count_poll=False)

    def _view(self, batch_id: str, count_poll: bool = True) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if count_poll:
            batch["polls"] += 1
        done, status, total = self._done(batch), self._status(batch), len(batch["lines"])
        failed = sum(1 for line in batch["lines"][:done] if line["custom_id"] in self.failing)
        if batch["provider"] == "anthropic":
            ended = status == "ended"
            counts = {"processing": 0 if ended else total - done, "succeeded": done - failed, "errored": failed,
                      "canceled": total - done if ended and batch["cancelled"] else 0,
                      "expired": total - done if ended and not batch["cancelled"] else 0}
            return {"id": batch_id, "type": "message_batch", "processing_status": status, "request_counts": counts,
                    "results_url": f"{self.base_url}/messages/batches/{batch_id}/results" if ended else None}
        if self.refuse_input and batch["polls"] > 1:
            return {"id": batch_id, "object": "batch", "status": "failed", "request_counts": {"total": 0},
                    "errors": {"data": [{"code": "invalid_json_line", "message": "line 1 is not valid"}]}}
        ended = status in ("completed", "expired", "cancelled")
        view = {"id": batch_id, "object": "batch", "status": status,
                "request_counts": {"total": total, "completed": done - failed,
                                   "failed": failed + (total - done if ended else 0)}}
        if ended:
            view["output_file_id"] = self._store_file(batch_id, "output", self._openai_lines(batch, ok=True))
            view["error_file_id"] = self._store_file(batch_id, "errors", self._openai_lines(batch, ok=False))
        return view

    def _store_file(self, batch_id: str, kind: str, lines: list[dict[str, Any]]) -> str:
        file_id = f"file-{batch_id}-{kind}"
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines)
        return file_id

    def _openai_lines(self, batch: dict[str, Any], ok: bool) -> list[dict[str, Any]]:
        done = self._done(batch)
        lines = []
        for index, line in enumerate(batch["lines"]):
            answered = index < done and line["custom_id"] not in self.failing
            if answered != ok:
                continue
            if answered:
                answer = self.completion(line["body"])
                body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer["text"]}}],
                        "usage": {"prompt_tokens": answer["prompt_tokens"],
                                  "completion_tokens": answer["completion_tokens"]}}
                lines.append({"id": f"r{index}", "custom_id": line["custom_id"], "error": None,
                              "response": {"status_code": 200, "request_id": f"q{index}", "body": body}})
            elif index < done:
                lines.append({"id": f"r{index}", "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 500, "request_id": f"q{index}",
                    "body": {"error": {"type": "server_error", "message": "scripted failure"}}}})
            else:
                code = "batch_cancelled" if batch["cancelled"] else "batch_expired"
                lines.append({"id": f"r{index}", "custom_id": line["custom_id"], "response": None,
                              "error": {"code": code, "message": "not run before the batch ended"}})
        return lines

    # ---------------------------------------------------------------- Anthropic

    def anthropic_create(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        lines = [{"custom_id": request["custom_id"], "body": request["params"]} for request in payload["requests"]]
        return 200, self._new_batch("anthropic", lines)

    def anthropic_results(self, batch_id: str) -> str:
        batch = self.batches[batch_id]
        done, results = self._done(batch), []
        for index, line in enumerate(batch["lines"]):
            if index >= done:
                result = {"type": "canceled" if batch["cancelled"] else "expired"}
            elif line["custom_id"] in self.failing:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "overloaded_error", "message": "scripted failure"}}}
            else:
                answer = self.completion(line["body"])
                result = {"type": "succeeded", "message": {
                    "content": [{"type": "text", "text": answer["text"]}],
                    "usage": {"input_tokens": answer["prompt_tokens"], "output_tokens": answer["completion_tokens"]}}}
            results.append({"custom_id": line["custom_id"], "result": result})
        return "".join(json.dumps(result) + "\n" for result in results)

    # ---------------------------------------------------------------- HTTP

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON payload or text, extra headers) of one request."""
        for name in ("Authorization", "x-api-key"):
            if headers.get(name):
                self.authorizations.add(headers[name])
        parts = path.removeprefix("/v1/").strip("/").split("/")
        if method == "POST" and parts in (["batches"], ["messages", "batches"]):
            with self.lock:
                self.create_attempts += 1
                limited = self.create_attempts <= self.rate_limited_creates
            if limited:
                return 429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"}
            payload = json.loads(raw)
            status, body = self.openai_create(payload) if parts == ["batches"] else self.anthropic_create(payload)
            return status, body, {}
        if method == "POST" and parts == ["tokenize"] and self.tokenize:
            count = self.completion(json.loads(raw))["prompt_tokens"]
            return 200, {"count": count, "max_model_len": 8192, "tokens": list(range(count))}, {}
        if method == "POST" and parts == ["files"]:
            return 200, self._upload(headers, raw), {}
        if parts[-1] in ("content", "results") and self.broken_downloads > 0:
            self.broken_downloads -= 1
            return 500, {"error": {"message": "download failed"}}, {}
        if parts[0] == "files" and parts[-1] == "content":
            return 200, self.files[parts[1]], {}
        if parts[:2] == ["messages", "batches"]:
            batch_id = parts[2]
            if parts[-1] == "results":
                return 200, self.anthropic_results(batch_id), {}
            if parts[-1] == "cancel":
                self.batches[batch_id]["cancelled"] = True
            return 200, self._view(batch_id, count_poll=parts[-1] != "cancel"), {}
        if parts[0] == "batches":
            if parts[-1] == "cancel":
                self.batches[parts[1]]["cancelled"] = True
                return 200, {"id": parts[1], "status": "cancelling"}, {}
            return 200, self._view(parts[1]), {}
        return 404, {"error": {"message": f"no route {method} {path}"}}, {}

    def _upload(self, headers: Any, raw: bytes) -> dict[str, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode() + raw)
        content = next(part.get_content() for part in message.iter_parts()
                       if part.get_param("name", header="content-disposition") == "file")
        content = content.decode() if isinstance(content, bytes) else content
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return {"id": file_id, "object": "file", "purpose": "batch"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, payload, extra = server.route(method, self.path, self.headers, raw)
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
