"""Read a user's own questions (and an optional corpus) into an `ImportedBenchmark`.

A question file holds one record per question: `question`, `answers` (a string or a list of
strings; left out or null for a question without gold answers: its outcomes are enumerated and can
be judged or scored by consensus, never by F1), an optional `id` (a string or an integer; by
default `line-N`) and optional `contexts` (a list of `{title, text}` passages). A corpus file holds
`{title, text}` records. Every passage of either goes into the benchmark's retrieval corpus, which
each of its questions retrieves from. Formats: JSON lines, CSV (list cells written as JSON) and
Parquet, told by the file extension or named explicitly. Every problem is an `ImportFormatError`
naming the file, line and field.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from forge_core.data.importers import (
    BENCHMARK_FILES,
    QA_ONLY_FILES,
    ImportedBenchmark,
    ImportFormatError,
    Record,
    RecordError,
    RecordParser,
    answers_field,
    file_sha256,
    json_records,
    parse_records,
    read_utf8,
    text_field,
)
from forge_core.errors import InvalidInput
from forge_core.records import Document, Example

FORMATS: tuple[str, ...] = ("jsonl", "csv", "parquet")
EXTENSIONS: dict[str, str] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
JSON_CELLS: tuple[str, ...] = ("answers", "contexts")  # CSV cells that may hold a JSON list


def check_benchmark_name(name: str) -> None:
    """Refuse a name that is not a short slug or that is a built-in benchmark's."""
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(f"invalid benchmark name '{name}': use 1 to 40 lowercase letters, digits, '-' or '_', "
                         "starting with a letter or digit")
    if name in BENCHMARK_FILES or name in QA_ONLY_FILES:
        raise InvalidInput(f"'{name}' is a built-in benchmark: choose another --name")


def file_format(path: Path, requested: str | None = None) -> str:
    """The format named (`jsonl`, `csv` or `parquet`), else the one the extension tells."""
    chosen = requested or EXTENSIONS.get(path.suffix.lower())
    if chosen not in FORMATS:
        told = f"'{requested}'" if requested else f"extension '{path.suffix}'"
        raise ImportFormatError(path, None, f"unknown format ({told}): use --format jsonl, csv or parquet")
    return chosen


def table_records(path: Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line, record) pairs of a JSON lines, CSV or Parquet file (a Parquet "line" is its row)."""
    if not path.is_file():
        raise ImportFormatError(path, None, "file not found")
    if fmt == "jsonl":
        return json_records(path, json_array=False)
    if fmt == "csv":
        return _csv_records(path)
    return _parquet_records(path)


def _csv_records(path: Path) -> Iterator[tuple[int, Record]]:
    """Rows of a CSV file with a header line; empty cells are missing fields."""
    reader = csv.DictReader(io.StringIO(read_utf8(path), newline=""))
    try:
        for row in reader:
            record = {key: value for key, value in row.items() if key is not None and value not in ("", None)}
            yield reader.line_num, {key: _csv_cell(path, reader.line_num, key, value) for key, value in record.items()}
    except csv.Error as error:
        raise ImportFormatError(path, reader.line_num, f"malformed CSV: {error}") from None


def _csv_cell(path: Path, line: int, key: str, value: str) -> Any:
    """A cell's value: `answers` and `contexts` cells written as a JSON list are decoded."""
    if key not in JSON_CELLS or not value.lstrip().startswith("["):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        if key == "answers":
            return value  # an answer that merely starts with "["
        raise ImportFormatError(path, line, f"field '{key}' is not a JSON list: {error.msg}") from None


def _parquet_records(path: Path) -> Iterator[tuple[int, Record]]:
    import pyarrow
    import pyarrow.parquet

    try:
        rows = pyarrow.parquet.read_table(path).to_pylist()
    except (pyarrow.ArrowException, OSError) as error:
        raise ImportFormatError(path, None, f"not a readable Parquet file: {error}") from None
    for number, row in enumerate(rows, start=1):
        yield number, {key: value for key, value in row.items() if value is not None}


# ---------------------------------------------------------------- records


def _example_id(record: Record, line: int) -> str:
    value = record.get("id")
    if value is None:
        return f"line-{line}"
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise RecordError("field 'id' must be a non-empty string or an integer")
    return str(value).strip()


def _answers(record: Record) -> tuple[str, ...]:
    value = record.get("answers")
    if value is None:
        return ()  # a question without gold answers
    if not isinstance(value, (str, list)) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        raise RecordError("field 'answers' must be a string or a list of strings")
    return answers_field(value, "answers")


def _passage(benchmark: str, record: Any, where: str) -> Document:
    """A `{title, text}` record as a corpus document (the title may be left out)."""
    if not isinstance(record, dict):
        raise RecordError(f"{where} must be an object with 'title' and 'text'")
    title = record.get("title", "")
    if not isinstance(title, str):
        raise RecordError(f"field '{where}.title' must be a string")
    try:
        text = text_field(record, "text")
    except RecordError:
        raise RecordError(f"field '{where}.text' must be a non-empty string") from None
    return Document(benchmark, title.strip(), text)


def _contexts(benchmark: str, record: Record) -> list[Document]:
    contexts = record.get("contexts", [])
    if not isinstance(contexts, list):
        raise RecordError("field 'contexts' must be a list of {title, text} objects")
    return [_passage(benchmark, entry, f"contexts[{index}]") for index, entry in enumerate(contexts)]


def question_parser(benchmark: str) -> RecordParser:
    """The parser of a question file's records for benchmark `benchmark`."""

    def parse(record: Record, line: int) -> tuple[Example, list[Document]]:
        example = Example(benchmark, _example_id(record, line), text_field(record, "question"), _answers(record))
        return example, _contexts(benchmark, record)

    return parse


def corpus_parser(benchmark: str) -> RecordParser:
    """The parser of a corpus file's `{title, text}` records (documents only)."""

    def parse(record: Record, line: int) -> tuple[None, list[Document]]:
        return None, [_passage(benchmark, record, "record")]

    return parse


# ---------------------------------------------------------------- whole files


def read_user_file(path: Path, name: str, corpus: Path | None = None, fmt: str | None = None) -> ImportedBenchmark:
    """Read a question file (format `fmt`, else from its extension) and an optional corpus file
    (format from its extension) as benchmark `name`. The source hash covers both files, so a
    change to either is a changed import."""
    check_benchmark_name(name)
    examples, documents = parse_records(path, table_records(path, file_format(path, fmt)), question_parser(name))
    if not examples:
        raise ImportFormatError(path, None, "no records found")
    source_sha256 = file_sha256(path)
    if corpus is not None:
        _, passages = parse_records(corpus, table_records(corpus, file_format(corpus)), corpus_parser(name))
        if not passages:
            raise ImportFormatError(corpus, None, "no records found")
        documents = tuple({d.doc_id: d for d in (*documents, *passages)}.values())
        source_sha256 = hashlib.sha256(f"{source_sha256}:{file_sha256(corpus)}".encode()).hexdigest()
    if not documents:
        raise ImportFormatError(path, None, "no passages to retrieve from: give records 'contexts' or a --corpus file")
    return ImportedBenchmark(name, path, source_sha256, examples, documents)
