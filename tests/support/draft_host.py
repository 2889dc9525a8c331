"""A test double for the gates' probe: an in-process host that answers every request with one
recorded llama.cpp chat completion (SmolLM2's, with top-2 logprobs), parsed by the real
OpenAI-compatible parser, and fails on questions containing `fail_on`."""

from __future__ import annotations

from forge_core.hosts.base import Generation, GenerationRequest, Host, HostConfig, HostError
from forge_core.hosts.openai_compat import parse_chat_completion

DRAFT_DOUBLE = HostConfig(name="draft-double", kind="openai", model="draft-double", base_url="http://127.0.0.1:9/v1")

# Recorded from `python -m llama_cpp.server` (llama-cpp-python 0.3.36) on SmolLM2-135M-Instruct with
# "logprobs": true, "top_logprobs": 2; cut to its first two tokens.
RECORDED_RESPONSE = {
    "choices": [{
        "index": 0,
        "message": {"content": "The capital", "role": "assistant"},
        "logprobs": {"content": [
            {"token": "The", "logprob": -1.004293441772461, "bytes": None,
             "top_logprobs": [{"token": "The", "logprob": -1.004293441772461, "bytes": None},
                              {"token": "Le", "logprob": -1.4950237274169922, "bytes": None}]},
            {"token": " capital", "logprob": -0.008253395557403564, "bytes": None,
             "top_logprobs": [{"token": " Capital", "logprob": -5.363060474395752, "bytes": None},
                              {"token": " capital", "logprob": -0.008253395557403564, "bytes": None}]},
        ]},
        "finish_reason": "length",
    }],
    "usage": {"prompt_tokens": 41, "completion_tokens": 2, "total_tokens": 43},
}


class DraftHost(Host):
    """Answers each request with `RECORDED_RESPONSE` (through the real parser); raises `HostError`
    on a question containing `fail_on`. Keeps every request it received."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.config, self.fail_on = DRAFT_DOUBLE, fail_on
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        if self.fail_on is not None and self.fail_on in request.messages[-1]["content"]:
            raise HostError("scripted failure", attempts=1)
        return parse_chat_completion(RECORDED_RESPONSE)

    async def aclose(self) -> None:
        return None
