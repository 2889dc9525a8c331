"""Embedders: the ONNX Runtime MiniLM against the PyTorch one, naming, and which embedder a
router's lineage asks for."""

from __future__ import annotations

import numpy as np
import pytest

from forge_core.evidence.embedders import (
    DEFAULT_EMBEDDER,
    MINILM,
    OnnxEmbedder,
    TorchEmbedder,
    embedder_name,
    load_embedder,
    spec_for_name,
)

TEXTS = [
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    "Were Scott Derrickson and Ed Wood of the same nationality?",
    "Paris",
    "The Eiffel Tower was built in 1889 for the World's Fair. " * 40,  # past 256 word pieces: truncated
]


def test_onnx_minilm_matches_the_pytorch_one() -> None:
    onnx, torch_model = load_embedder(DEFAULT_EMBEDDER), load_embedder(MINILM)
    assert isinstance(onnx, OnnxEmbedder) and isinstance(torch_model, TorchEmbedder)
    ours, theirs = onnx.embed(TEXTS), torch_model.embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * theirs).sum(axis=1).min() > 0.9999
    one_by_one = np.stack([onnx.embed([text])[0] for text in TEXTS])  # padding in a batch changes nothing
    np.testing.assert_allclose(ours, one_by_one, atol=1e-5)
    assert onnx.embed([]).shape == (0, 384)


def test_names_keep_runtimes_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORGE_EMBEDDER", raising=False)
    assert embedder_name() == "all-MiniLM-L6-v2@onnx"
    assert embedder_name(MINILM) == "all-MiniLM-L6-v2"
    assert embedder_name("/models/bge-small-en-v1.5/@onnx") == "bge-small-en-v1.5@onnx"
    with pytest.raises(ValueError, match="unknown embedder runtime '@tensorrt'"):
        embedder_name("all-MiniLM-L6-v2@tensorrt")


def test_a_router_gets_the_embedder_it_was_trained_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_EMBEDDER", "BAAI/bge-base-en-v1.5")
    assert spec_for_name("bge-base-en-v1.5") == "BAAI/bge-base-en-v1.5"  # the configured one
    assert spec_for_name("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"  # bundled: always available
    assert spec_for_name("all-MiniLM-L6-v2@onnx") == "all-MiniLM-L6-v2@onnx"
    with pytest.raises(ValueError, match="trained on embedder 'e5-large': set FORGE_EMBEDDER"):
        spec_for_name("e5-large")


def test_the_onnx_runtime_refuses_a_model_it_cannot_pool(tmp_path) -> None:
    with pytest.raises(ValueError, match="exports a local model"):
        load_embedder("some/hub-model@onnx")
