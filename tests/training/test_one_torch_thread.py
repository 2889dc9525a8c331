"""`one_torch_thread`: one torch thread inside the block, the previous count restored after it."""

from __future__ import annotations

import pytest
import torch

from forge_core.training.threads import one_torch_thread


def test_one_thread_inside_and_restored_after_an_error() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), one_torch_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError("stop")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
