"""Import benchmarks (built-in or a user's own file) into the store: read, split with every split
seed, write in one transaction."""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge_core.data.importers import BENCHMARK_FILES, ImportedBenchmark, ImportFormatError, read_benchmark
from forge_core.data.splits import SPLIT_SEEDS, assign_splits
from forge_core.data.user_files import read_user_file
from forge_core.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    """What importing one benchmark did."""

    benchmark: str
    added: bool  # False when the same file had been imported before
    examples: int
    documents: int


def import_benchmarks(
    store: Store,
    benchmarks_dir: Path,
    names: Sequence[str] = tuple(BENCHMARK_FILES),
    on_done: Callable[[ImportResult], None] | None = None,
) -> list[ImportResult]:
    """Import each named benchmark (one transaction each); re-running adds nothing twice."""
    results = []
    for name in names:
        result = store_imported(store, read_benchmark(name, benchmarks_dir))
        results.append(result)
        if on_done:
            on_done(result)
    return results


def import_user_file(store: Store, path: Path, name: str, corpus: Path | None = None,
                     fmt: str | None = None) -> ImportResult:
    """Import a user's question file (and corpus) as benchmark `name`, split like the built-ins;
    the whole file is read and checked before anything is written."""
    return store_imported(store, read_user_file(path, name, corpus, fmt))


@dataclass(frozen=True)
class Upload:
    """A file handed over as bytes (the dashboard's upload): its name tells the format."""

    filename: str
    content: bytes


def import_uploaded(store: Store, name: str, questions: Upload, corpus: Upload | None = None,
                    fmt: str | None = None) -> ImportResult:
    """`import_user_file` for uploaded files: they are read from a temporary folder (errors name
    the uploaded file), and the import records the uploaded file's name as its source."""
    with tempfile.TemporaryDirectory(prefix="forge-upload-") as folder:
        staged_corpus = _stage(Path(folder) / "corpus", corpus) if corpus else None
        try:
            imported = read_user_file(_stage(Path(folder) / "questions", questions), name, staged_corpus, fmt)
        except ImportFormatError as error:
            uploaded = Path(error.path.name) if Path(folder) in error.path.parents else error.path
            raise ImportFormatError(uploaded, error.line, error.reason) from None
    return store_imported(store, dataclasses.replace(imported, source_path=Path(Path(questions.filename).name)))


def _stage(folder: Path, upload: Upload) -> Path:
    """The upload written under `folder` by its base name (never a path the upload chose)."""
    folder.mkdir()
    path = folder / (Path(upload.filename).name or "upload")
    path.write_bytes(upload.content)
    return path


def store_imported(store: Store, imported: ImportedBenchmark) -> ImportResult:
    """Split a read benchmark under every split seed and write it in one transaction."""
    ids = [example.example_id for example in imported.examples]
    assignments = [assign_splits(imported.name, ids, seed, imported.source_sha256) for seed in SPLIT_SEEDS]
    added = store.import_benchmark(
        imported.name, imported.source_path, imported.source_sha256,
        imported.examples, imported.documents, assignments,
    )
    log.info("%s: %s", imported.name, "imported" if added else "already imported, unchanged")
    return ImportResult(imported.name, added, len(imported.examples), len(imported.documents))
