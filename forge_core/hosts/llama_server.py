"""The embedded host's server process: llama-cpp-python's OpenAI-compatible server, with every model
call run on one thread.

llama-cpp-python's server runs each call on whichever worker thread of its pool is free, and its
llama.cpp build parallelises with OpenMP, which gives every thread that calls the model a team of
worker threads of its own. Once two teams are alive (an idle pool thread lives on for 10 s), libgomp
counts more threads than cores and stops spinning at its barriers (100 spins instead of 300,000):
each of the few hundred barriers of a generated token then sleeps and wakes, and decoding ran about a
quarter slower here (see docs/stage0.md). Calling the model from one thread only keeps one team.

Run as `python -m forge_core.hosts.llama_server` with `python -m llama_cpp.server`'s arguments.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

MODEL_METHODS = ("create_completion", "create_chat_completion", "create_embedding", "embed")
_END = object()


class ModelThread:
    """One thread on which every model call runs; a call made on it runs at once."""

    def __init__(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="llama-model", initializer=self._remember_thread)
        self._thread_id: int | None = None

    def _remember_thread(self) -> None:
        self._thread_id = threading.get_ident()

    def run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` on the model thread; its result (a stream is pinned too)."""
        if threading.get_ident() == self._thread_id:
            return function(*args, **kwargs)
        result = self._executor.submit(function, *args, **kwargs).result()
        return self._pinned_stream(result) if isinstance(result, Iterator) else result

    def _pinned_stream(self, stream: Iterator) -> Iterator:
        """A streamed answer whose every next chunk is computed on the model thread."""
        while (chunk := self.run(next, stream, _END)) is not _END:
            yield chunk

    def pin(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """`method` wrapped to run on the model thread."""
        @functools.wraps(method)
        def pinned(*args: Any, **kwargs: Any) -> Any:
            return self.run(method, *args, **kwargs)
        return pinned


def pin_model_calls(llama_class: type, model_thread: ModelThread) -> None:
    """Make the model-computing methods of `llama_class` run on `model_thread`."""
    for name in MODEL_METHODS:
        setattr(llama_class, name, model_thread.pin(getattr(llama_class, name)))


def main() -> None:
    """Serve as `python -m llama_cpp.server` does, every model call on one thread."""
    import llama_cpp
    from llama_cpp.server.__main__ import main as serve

    pin_model_calls(llama_cpp.Llama, ModelThread())
    serve()


if __name__ == "__main__":
    main()
