"""Passage vectors: embedded once per corpus and embedder, kept atomically, rebuilt when the
corpus or the embedder changes. The embedder is a test double (hash-derived vectors that count
what they embed), so these tests need no model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from forge_core.evidence.embedders import Embedder
from forge_core.evidence.passage_vectors import BUILD_CHUNK, PassageVectors, passage_text, vectors_path
from forge_core.records import Document
from forge_core.store import Store

CORPUS = [Document("hotpotqa", f"Title {i}", f"Passage number {i}.") for i in range(5)]


class HashingTestEmbedder(Embedder):
    """Test double: a deterministic unit vector per text; records every text it embeds."""

    def __init__(self, name: str = "hashing-test-double") -> None:
        self.name = name
        self.embedded: list[str] = []

    def embed(self, texts):
        self.embedded += list(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.uint8).astype(np.float32)
                for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), 32)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def expected(document: Document) -> np.ndarray:
    return HashingTestEmbedder().embed([passage_text(document)])[0]


def test_a_passage_is_embedded_once_and_kept(tmp_path: Path) -> None:
    embedder = HashingTestEmbedder()
    vectors = PassageVectors(CORPUS, embedder, save_every=1)
    vectors.ensure(CORPUS[:2])
    np.testing.assert_allclose(vectors.vector(CORPUS[1]), expected(CORPUS[1]))
    assert len(embedder.embedded) == 2 + 1  # + the dimension probe
    np.testing.assert_allclose(vectors.vector(CORPUS[4]), expected(CORPUS[4]))  # embedded on first need
    assert not vectors.complete

    again = HashingTestEmbedder()
    reopened = PassageVectors(CORPUS, again)  # another process: reads the kept file
    assert reopened.filled.tolist() == [True, True, False, False, True]
    progress: list[tuple[int, int]] = []
    reopened.ensure_all(lambda done, total: progress.append((done, total)))
    assert again.embedded[1:] == [passage_text(CORPUS[2]), passage_text(CORPUS[3])]
    assert progress == [(2, 2)] and reopened.complete
    np.testing.assert_allclose(reopened.vectors, np.stack([expected(d) for d in CORPUS]))
    assert [p.name for p in reopened.path.parent.iterdir()] == [reopened.path.name]  # no temporary left


def test_a_changed_corpus_or_embedder_gets_its_own_file() -> None:
    edited = [*CORPUS[:4], Document("hotpotqa", "Title 4", "Passage number 4, edited.")]
    base = vectors_path(CORPUS, "hashing-test-double")
    assert vectors_path(edited, "hashing-test-double") != base
    assert vectors_path(CORPUS[::-1], "hashing-test-double") != base
    assert vectors_path(CORPUS, "all-MiniLM-L6-v2@onnx") != base
    assert base.name.startswith("hotpotqa-hashing-test-double-") and base.suffix == ".npz"

    PassageVectors(CORPUS, HashingTestEmbedder()).ensure_all()
    other = PassageVectors(edited, HashingTestEmbedder())
    assert not other.filled.any()


def test_an_unreadable_file_is_rebuilt() -> None:
    path = vectors_path(CORPUS, "hashing-test-double")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an npz file")
    vectors = PassageVectors(CORPUS, HashingTestEmbedder())
    assert not vectors.filled.any()
    vectors.ensure_all()
    assert PassageVectors(CORPUS, HashingTestEmbedder()).complete


def test_a_passage_of_another_corpus_is_refused() -> None:
    with pytest.raises(KeyError):
        PassageVectors(CORPUS, HashingTestEmbedder()).vector(Document("popqa", "Elsewhere", "Not here."))


def test_a_large_fill_uses_the_bulk_embedder_and_saves_by_chunk() -> None:
    corpus = [Document("popqa", f"T{i}", f"text {i}") for i in range(BUILD_CHUNK + 3)]
    live, bulk = HashingTestEmbedder(), HashingTestEmbedder()
    progress: list[tuple[int, int]] = []
    PassageVectors(corpus, live, bulk).ensure_all(lambda done, total: progress.append((done, total)))
    assert len(bulk.embedded) == len(corpus) and len(live.embedded) == 1  # the dimension probe only
    assert progress == [(BUILD_CHUNK, len(corpus)), (len(corpus), len(corpus))]


def test_index_build_command_embeds_every_passage_once(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    store = Store(tmp_path / "forge.duckdb")
    store.import_benchmark("hotpotqa", tmp_path / "hotpotqa.json", "sha", [], CORPUS, [])
    env = {**os.environ, "FORGE_STORE": str(store.path), "FORGE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "forge_core.cli", "index", "build", "--embedder", "all-MiniLM-L6-v2", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["passages"] == {"hotpotqa": 5}
    kept = list((tmp_path / "cache" / "passage_vectors").iterdir())
    assert [p.name for p in kept] == [vectors_path(CORPUS, "all-MiniLM-L6-v2").name]
    with np.load(kept[0]) as arrays:
        assert arrays["filled"].all() and arrays["vectors"].shape == (5, 384)
    missing = subprocess.run([*command[:5], "--benchmark", "popqa"], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "no corpus for 'popqa'" in missing.stderr


def test_passages_embedded_one_at_a_time_are_saved_in_groups() -> None:
    vectors = PassageVectors(CORPUS, HashingTestEmbedder(), save_every=2)
    vectors.vector(CORPUS[0])
    assert not vectors.path.exists()  # one passage: kept in memory only
    np.testing.assert_allclose(vectors.vector(CORPUS[0]), expected(CORPUS[0]))
    vectors.vector(CORPUS[3])
    assert PassageVectors(CORPUS, HashingTestEmbedder()).filled.tolist() == [True, False, False, True, False]
