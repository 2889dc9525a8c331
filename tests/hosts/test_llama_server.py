"""The embedded server's launcher: every model call runs on one thread (one OpenMP team)."""

from __future__ import annotations

import threading

from forge_core import config
from forge_core.hosts.llama_server import ModelThread, pin_model_calls
from forge_core.hosts.models import model_path
from forge_core.hosts.registry import BUILTIN_HOSTS

from support.resources import require_tiny_model


def call_from_threads(function, count: int = 4) -> list:
    """`function()` called once from each of `count` threads, one call after another; its results.
    Every caller stays alive until the last call returns, so no two callers share a thread id."""
    results, release, callers = [], threading.Event(), []

    def call(done: threading.Event) -> None:
        results.append(function())
        done.set()
        release.wait()

    for _ in range(count):
        done = threading.Event()
        callers.append(threading.Thread(target=call, args=(done,)))
        callers[-1].start()
        assert done.wait(timeout=30), "a call never returned"
    release.set()
    for caller in callers:
        caller.join()
    return results


def test_calls_from_several_threads_run_on_one_thread_that_is_none_of_theirs():
    model_thread = ModelThread()
    callers = []

    def call():
        callers.append(threading.get_ident())
        return model_thread.run(threading.get_ident)

    ran_on = call_from_threads(call)
    assert len(set(ran_on)) == 1
    assert ran_on[0] not in callers


def test_a_call_made_on_the_model_thread_runs_there_at_once():
    model_thread = ModelThread()
    outer = model_thread.pin(lambda: (threading.get_ident(), model_thread.run(threading.get_ident)))
    [(outer_thread, inner_thread)] = call_from_threads(outer, count=1)  # no deadlock waiting on itself
    assert inner_thread == outer_thread


def test_a_streamed_answer_is_computed_chunk_by_chunk_on_the_model_thread():
    model_thread = ModelThread()

    def stream():
        for _ in range(3):
            yield threading.get_ident()

    chunks = call_from_threads(lambda: list(model_thread.run(stream)), count=1)[0]
    assert len(chunks) == 3
    assert set(chunks) == {model_thread.run(threading.get_ident)}


def test_the_real_library_decodes_every_chat_completion_on_the_model_thread():
    require_tiny_model()
    import llama_cpp

    decoded_on: set[int] = set()

    class RecordingLlama(llama_cpp.Llama):  # a subclass: the library's own class stays as it is
        def eval(self, tokens):
            decoded_on.add(threading.get_ident())
            return super().eval(tokens)

    pin_model_calls(RecordingLlama, ModelThread())
    model = RecordingLlama(str(model_path(BUILTIN_HOSTS["embedded-tiny"].model, config.models_dir())),
                           n_ctx=512, n_threads=1, verbose=False)
    messages = [{"role": "user", "content": "Name a colour."}]
    call_from_threads(lambda: model.create_chat_completion(messages=messages, max_tokens=4))
    call_from_threads(lambda: list(model.create_chat_completion(messages=messages, max_tokens=4, stream=True)))
    assert len(decoded_on) == 1
