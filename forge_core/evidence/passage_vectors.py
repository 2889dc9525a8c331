"""Passage vectors: every corpus passage embedded once per corpus and embedder, kept on disk.

The cross-modal cosine feature compares a question with its top-1 BM25 passage. Embedding that
passage again for every routing decision cost more than the rest of routing together, so each
passage (title + " " + text, as the feature defines it) is embedded once and kept beside the BM25
index under ``config.cache_dir()/passage_vectors``, one file per corpus and embedder:

- `forge index build` embeds every passage of each corpus ahead of time (progress bar; minutes
  per corpus on two cores), after which routing never embeds a passage;
- without it, a passage is embedded the first time it is needed (computing stored features
  embeds the missing top-1 passages of a batch in one pass; a live question whose top-1 passage
  is not kept yet pays one passage embedding once) and kept, so no passage is embedded twice in a
  process. Passages embedded one at a time while routing are written in groups of
  `SAVE_EVERY` (the file holds the whole corpus: rewriting HotpotQA's for every live question
  cost 60 ms a routing decision); a process that ends earlier embeds them again next time.

The file name holds a hash of the embedder name and the corpus (every document's id, title and
text, in order), so a changed corpus or embedder gets a new file, never a stale one. Each write is
atomic (temporary file, then rename): an interrupted build keeps what an earlier write kept.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from forge_core import config
from forge_core.evidence.answering import load_retriever
from forge_core.evidence.embedders import Embedder, embedder_spec, load_embedder
from forge_core.evidence.retrieval import Retriever
from forge_core.records import Document
from forge_core.store import Store

log = logging.getLogger(__name__)

BUILD_CHUNK = 512  # passages embedded between two progress reports and two atomic saves
SAVE_EVERY = 256  # passages embedded one at a time (live routing) between two saves
BUILD_THREADS = os.cpu_count() or 1  # ONNX Runtime threads for the one-off corpus build

ProgressFn = Callable[[int, int], None]  # (passages done, total)


def passage_text(document: Document) -> str:
    """The text a passage is embedded as: title and text."""
    return f"{document.title} {document.text}"


def corpus_embedding_key(documents: Sequence[Document], embedder_name: str) -> str:
    """Hash of what the vectors depend on: the embedder's name and every document, in order."""
    digest = hashlib.sha256(embedder_name.encode("utf-8"))
    for document in documents:
        for part in (document.doc_id, document.title, document.text):
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
    return digest.hexdigest()[:20]


def vectors_path(documents: Sequence[Document], embedder_name: str) -> Path:
    """Where the vectors of a corpus under an embedder are kept."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_name)
    benchmark = documents[0].benchmark if documents else "empty"
    key = corpus_embedding_key(documents, embedder_name)
    return config.cache_dir() / "passage_vectors" / f"{benchmark}-{safe_name}-{key}.npz"


class PassageVectors:
    """The kept vectors of one corpus under one embedder; rows not embedded yet are zeros."""

    def __init__(self, documents: Sequence[Document], embedder: Embedder, bulk_embedder: Embedder | None = None,
                 save_every: int = SAVE_EVERY) -> None:
        """Open (or start) the kept vectors of a corpus; `bulk_embedder` is the same model with
        more threads for large fills; single passages are saved `save_every` at a time."""
        self.documents = tuple(documents)
        self.save_every = save_every
        self.unsaved = 0  # passages embedded one at a time since the last save
        self.embedder = embedder
        self.bulk_embedder = bulk_embedder or embedder
        self.path = vectors_path(self.documents, embedder.name)
        self.rows = {document.doc_id: row for row, document in enumerate(self.documents)}
        self.vectors, self.filled = self._read()

    @property
    def complete(self) -> bool:
        """True when every passage of the corpus is embedded."""
        return bool(self.filled.all())

    def vector(self, document: Document) -> np.ndarray:
        """The kept vector of a corpus passage (embedded and kept now if it was not yet)."""
        row = self.rows[document.doc_id]
        if not self.filled[row]:
            self.vectors[row] = self.embedder.embed([passage_text(document)])[0]
            self.filled[row] = True
            self.unsaved += 1
            if self.unsaved >= self.save_every:
                self._write()
        return self.vectors[row]

    def ensure(self, documents: Sequence[Document], on_progress: ProgressFn | None = None) -> None:
        """Embed and keep the given passages that are not kept yet."""
        missing = sorted({self.rows[d.doc_id] for d in documents} - set(np.flatnonzero(self.filled)))
        if not missing:
            return
        embedder = self.bulk_embedder if len(missing) > BUILD_CHUNK else self.embedder
        log.info("embedding %d passages of %s with %s", len(missing), self.path.name, embedder.name)
        for start in range(0, len(missing), BUILD_CHUNK):
            rows = missing[start : start + BUILD_CHUNK]
            self.vectors[rows] = embedder.embed([passage_text(self.documents[row]) for row in rows])
            self.filled[rows] = True
            self._write()
            if on_progress:
                on_progress(start + len(rows), len(missing))

    def ensure_all(self, on_progress: ProgressFn | None = None) -> None:
        """Embed every passage not kept yet."""
        self.ensure(self.documents, on_progress)

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        empty = (np.zeros((len(self.documents), self.embedder.dim), dtype=np.float32),
                 np.zeros(len(self.documents), dtype=bool))
        if not self.path.exists():
            return empty
        try:
            with np.load(self.path, allow_pickle=False) as arrays:
                vectors, filled = arrays["vectors"], arrays["filled"]
        except (OSError, ValueError, KeyError) as error:
            log.warning("unreadable passage vectors %s (%s); starting again", self.path, error)
            return empty
        if vectors.shape != empty[0].shape or filled.shape != empty[1].shape:
            log.warning("passage vectors %s have shape %s; starting again", self.path, vectors.shape)
            return empty
        return vectors, filled

    def _write(self) -> None:
        self.unsaved = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(dir=self.path.parent, prefix=f".{self.path.name}.", delete=False)
        try:
            with handle:
                np.savez(handle, vectors=self.vectors, filled=self.filled)
            os.replace(handle.name, self.path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise


@functools.lru_cache(maxsize=16)
def _opened(retriever: Retriever, spec: str) -> PassageVectors:
    return PassageVectors(retriever.documents, load_embedder(spec), load_embedder(spec, threads=BUILD_THREADS))


def passage_vectors(retriever: Retriever, spec: str | None = None) -> PassageVectors:
    """The kept vectors of a retriever's corpus under an embedder (opened once per process)."""
    return _opened(retriever, embedder_spec(spec))


def build_passage_vectors(store: Store, benchmarks: Sequence[str], spec: str | None = None,
                          on_progress: Callable[[str, int, int], None] | None = None) -> dict[str, PassageVectors]:
    """Benchmark -> its corpus's passage vectors, every passage embedded (the BM25 index too, if
    missing); `on_progress(benchmark, done, total)` follows the embedding."""
    found = {}
    for benchmark in benchmarks:
        progress = functools.partial(on_progress, benchmark) if on_progress else None
        found[benchmark] = passage_vectors(load_retriever(store, benchmark), spec)
        found[benchmark].ensure_all(progress)
    return found
