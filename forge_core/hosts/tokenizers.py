"""Counting a chat request's prompt tokens without generating anything.

- `PromptTokenizer`: an embedded model's GGUF carries its tokenizer and chat template: loading its
  vocabulary alone (llama.cpp `vocab_only`, under a second) and rendering the messages with the
  template gives the prompt tokens its server reports in `usage`, exactly (llama-cpp-python's
  server renders and tokenizes the same way). For other hosts, whose tokenizer FORGE does not
  have, this is the named tokenizer that `forge_core.enumeration.estimate` scales by a measured
  ratio.
- `ServerTokenizer`: a vLLM server's own `POST /tokenize`, which renders chat messages through
  the served model's template (with the body's `chat_template_kwargs`) and counts them: exact for
  that host, at one small HTTP request per prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from forge_core import config
from forge_core.hosts.base import HostConfig, HostError
from forge_core.hosts.http_retry import read_api_key
from forge_core.hosts.models import ModelError, is_pulled, model_path
from forge_core.hosts.openai_compat import openai_auth_headers

COUNTING_MODELS = ("qwen2.5-coder-1.5b", "smollm2-135m")  # preferred order for hosts without their own


@dataclass(frozen=True)
class PromptTokenizer:
    """The prompt-token counter of one embedded model (its GGUF's tokenizer and chat template)."""

    model_key: str  # e.g. "qwen2.5-coder-1.5b"

    def count(self, messages: Sequence[dict[str, str]]) -> int:
        """Prompt tokens of these chat messages, as the model's server counts them."""
        vocabulary, formatter = _loaded(str(model_path(self.model_key, config.models_dir())))
        rendered = formatter(messages=[dict(message) for message in messages])
        return len(vocabulary.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special,
                                       special=True))

    def count_text(self, text: str) -> int:
        """Tokens of a plain text, no chat template and no BOS (as a server's tokenize endpoint counts it)."""
        vocabulary, _ = _loaded(str(model_path(self.model_key, config.models_dir())))
        return len(vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def prompt_tokenizer(model_key: str | None = None) -> PromptTokenizer:
    """The tokenizer of `model_key`, or of the first pulled of `COUNTING_MODELS`."""
    keys = (model_key,) if model_key else COUNTING_MODELS
    for key in keys:
        if is_pulled(key, config.models_dir()):
            return PromptTokenizer(key)
    raise ModelError(f"no tokenizer to count prompt tokens: pull {' or '.join(keys)} (`forge host pull {keys[0]}`)")


TOKENIZE_TIMEOUT_S = 5.0


class ServerTokenizer:
    """Prompt tokens as a vLLM host counts them (`POST {server}/tokenize`)."""

    def __init__(self, host_config: HostConfig) -> None:
        self.host_name = host_config.name
        self.url = host_config.base_url.rstrip("/").removesuffix("/v1") + "/tokenize"
        self.client = httpx.Client(timeout=TOKENIZE_TIMEOUT_S,
                                   headers=openai_auth_headers(read_api_key(host_config)))

    def count(self, body: dict) -> int:
        """Prompt tokens of a chat-completions body (its model, messages and chat-template options);
        a failed or unreadable request raises a one-line `HostError`."""
        request = {"model": body["model"], "messages": body["messages"], "add_generation_prompt": True}
        if "chat_template_kwargs" in body:
            request["chat_template_kwargs"] = body["chat_template_kwargs"]
        try:
            response = self.client.post(self.url, json=request)
            response.raise_for_status()
            return int(response.json()["count"])
        except httpx.HTTPStatusError as error:
            raise HostError(f"host {self.host_name!r}: {self.url}: HTTP {error.response.status_code}") from None
        except httpx.HTTPError as error:
            raise HostError(f"host {self.host_name!r}: {self.url}: {type(error).__name__}") from None
        except (ValueError, KeyError, TypeError):
            raise HostError(f"host {self.host_name!r}: {self.url}: the reply holds no token count") from None


def server_tokenizer(host_config: HostConfig, probe_body: dict) -> ServerTokenizer | None:
    """The host's `/tokenize` when it answers one probe with a count, else None (most hosted APIs
    have none; a host whose key variable is unset is not asked: an estimate needs no key)."""
    if host_config.kind != "openai" or not host_config.base_url:
        return None
    try:
        tokenizer = ServerTokenizer(host_config)
    except HostError:
        return None
    try:
        tokenizer.count(probe_body)
    except HostError:
        tokenizer.client.close()
        return None
    return tokenizer


@functools.lru_cache(maxsize=2)
def _loaded(path: str):
    """(llama.cpp vocabulary, chat formatter) of a GGUF, loaded once per process."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    if not Path(path).is_file():
        raise ModelError(f"model file not found: {path}")
    with suppress_stdout_stderr(disable=False):  # llama.cpp warns of a context a vocabulary never uses
        vocabulary = Llama(path, vocab_only=True, verbose=False)
    template = vocabulary.metadata["tokenizer.chat_template"]
    eos = vocabulary._model.token_get_text(vocabulary.token_eos())
    bos_id = vocabulary.token_bos()
    bos = vocabulary._model.token_get_text(bos_id) if bos_id >= 0 else ""
    formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
    return vocabulary, formatter
