"""Torch's (and BLAS's) thread count for router work, apart from the training driver so that
evaluation protocols and the dashboard can use it without importing the driver."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread inside the block (the previous count is restored after it): the routers
    are small MLPs, and a second thread only competes with the embedded host for the CPU (Stage 2
    measured 20x slower on two threads next to llama.cpp)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch and BLAS on one thread inside the block: the matrices of an evaluation or a slider step
    are small, and on a busy 2-core machine extra threads only wait for each other (a demo-store
    Pareto step measured 0.3-0.9 s with the default threads, under 0.1 s on one)."""
    with one_torch_thread(), _blas_libraries().limit(limits=1):
        yield


@functools.cache
def _blas_libraries() -> ThreadpoolController:
    """The BLAS libraries loaded, found once (finding them costs milliseconds a time)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
