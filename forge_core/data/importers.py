"""Read the five FORGE benchmarks (and the `qa_only` lists) in their upstream formats.

Each importer turns one upstream record into an `Example` and the `Document`s it contributes to
its benchmark's retrieval corpus; `read_benchmark` runs it over a whole file, deduplicates the
corpus and turns every malformed record into an `ImportFormatError` naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge_core.errors import InvalidInput
from forge_core.records import FEVER_LABELS, Document, Example


class ImportFormatError(InvalidInput):
    """A benchmark file that cannot be read, with the file and line (or record) at fault."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


class RecordError(Exception):
    """A problem with one record; `read_benchmark` adds the file and line."""


Record = dict[str, Any]
RecordParser = Callable[[Record, int], tuple[Example | None, list[Document]]]


@dataclass(frozen=True)
class BenchmarkFile:
    """Where a benchmark lives under the benchmarks directory and how to parse its records."""

    name: str
    relative_path: str
    parse: RecordParser
    json_array: bool = False  # a single JSON array rather than JSON lines


@dataclass(frozen=True)
class ImportedBenchmark:
    """Everything read from one benchmark file."""

    name: str
    source_path: Path
    source_sha256: str
    examples: tuple[Example, ...]
    documents: tuple[Document, ...]


# ---------------------------------------------------------------- field helpers


def _field(record: Record, key: str) -> Any:
    if key not in record or record[key] is None:
        raise RecordError(f"missing field '{key}'")
    return record[key]


def text_field(record: Record, key: str) -> str:
    value = _field(record, key)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"field '{key}' must be a non-empty string")
    return value.strip()


def answers_field(values: Any, key: str) -> tuple[str, ...]:
    """Gold answers as a tuple of distinct non-empty strings, in upstream order."""
    items = [values] if isinstance(values, str) else values
    if not isinstance(items, list):
        raise RecordError(f"field '{key}' must be a string or a list of strings")
    answers = tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
    if not answers:
        raise RecordError(f"missing answer: field '{key}' is empty")
    return answers


def _sentence_lookup(paragraphs: dict[str, list[str]], facts: Any) -> tuple[str, ...]:
    """Texts of the (title, sentence index) supporting facts that resolve in the context."""
    found = []
    for fact in facts or []:
        if isinstance(fact, list) and len(fact) == 2:
            sentences = paragraphs.get(fact[0], [])
            if isinstance(fact[1], int) and 0 <= fact[1] < len(sentences):
                found.append(sentences[fact[1]].strip())
    return tuple(found)


# ---------------------------------------------------------------- one parser per format


def parse_hotpotqa(record: Record, line: int) -> tuple[Example, list[Document]]:
    """HotpotQA distractor, HF style: context is a list of {title, sentences}.

    The original release's `_id` and `[[title, [sentences]]]` context are accepted too.
    """
    example_id = str(record.get("id") or _field(record, "_id"))
    paragraphs = _context_paragraphs(_field(record, "context"), joiner="")
    example = Example(
        benchmark="hotpotqa",
        example_id=example_id,
        question=text_field(record, "question"),
        answers=answers_field(_field(record, "answer"), "answer"),
        evidence=_sentence_lookup(paragraphs, record.get("supporting_facts")),
    )
    return example, _paragraph_documents("hotpotqa", paragraphs, joiner="")


def parse_2wikimultihopqa(record: Record, line: int) -> tuple[Example, list[Document]]:
    """2WikiMultihopQA original: `_id`, context as [[title, [sentences]]]."""
    paragraphs = _context_paragraphs(_field(record, "context"), joiner=" ")
    example = Example(
        benchmark="2wikimultihopqa",
        example_id=str(_field(record, "_id")),
        question=text_field(record, "question"),
        answers=answers_field(_field(record, "answer"), "answer"),
        evidence=_sentence_lookup(paragraphs, record.get("supporting_facts")),
    )
    return example, _paragraph_documents("2wikimultihopqa", paragraphs, joiner=" ")


def _context_paragraphs(context: Any, joiner: str) -> dict[str, list[str]]:
    """Title -> sentences from either context layout ({title, sentences} or [title, sentences])."""
    if not isinstance(context, list):
        raise RecordError("field 'context' must be a list")
    paragraphs: dict[str, list[str]] = {}
    for entry in context:
        if isinstance(entry, dict):
            title, sentences = entry.get("title"), entry.get("sentences")
        elif isinstance(entry, list) and len(entry) == 2:
            title, sentences = entry
        else:
            raise RecordError("unknown context entry format")
        if not isinstance(title, str) or not isinstance(sentences, list):
            raise RecordError("context entry needs a title and a list of sentences")
        paragraphs.setdefault(title, [str(s) for s in sentences])
    return paragraphs


def _paragraph_documents(benchmark: str, paragraphs: dict[str, list[str]], joiner: str) -> list[Document]:
    documents = []
    for title, sentences in paragraphs.items():
        text = joiner.join(sentences).strip()
        if text:
            documents.append(Document(benchmark=benchmark, title=title, text=text))
    return documents


def parse_musique(record: Record, line: int) -> tuple[Example, list[Document]]:
    """MuSiQue-Ans: paragraphs [{idx, title, paragraph_text, is_supporting}], answer + aliases."""
    paragraphs = _field(record, "paragraphs")
    if not isinstance(paragraphs, list):
        raise RecordError("field 'paragraphs' must be a list")
    answers = [_field(record, "answer"), *(record.get("answer_aliases") or [])]
    documents = [
        Document("musique", str(p.get("title", "")), str(p.get("paragraph_text", "")).strip())
        for p in paragraphs
        if str(p.get("paragraph_text", "")).strip()
    ]
    evidence = tuple(str(p["paragraph_text"]).strip() for p in paragraphs if p.get("is_supporting"))
    example = Example(
        benchmark="musique",
        example_id=str(_field(record, "id")),
        question=text_field(record, "question"),
        answers=answers_field(answers, "answer"),
        evidence=evidence,
    )
    return example, documents


_SEARCH_R1_TITLE = re.compile(r'^\(Title: "(?P<title>[^"]*)"\)\s*(?P<text>.*)$', re.DOTALL)


def popqa_passage_document(passage: Any) -> Document:
    """A PopQA passage as a Document; the title is recovered where the source's layout gives it.

    `search-r1` passages start with `(Title: "...")`; `psi-rag` ones put the title (sometimes
    followed by " - section") on the first line; the CRAG sources carry no separate title.
    """
    if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
        raise RecordError("each passage needs a 'text' string")
    text = passage["text"].strip()
    match = _SEARCH_R1_TITLE.match(text)
    if match:
        return Document("popqa", match["title"].strip(), match["text"].strip())
    if passage.get("source") == "psi-rag" and "\n" in text:
        first_line, rest = text.split("\n", 1)
        return Document("popqa", first_line.strip().rstrip("-").strip(), rest.strip())
    return Document("popqa", "", text)


def parse_popqa(record: Record, line: int) -> tuple[Example, list[Document]]:
    """PopQA with passages: `row`, `question`, `answers` (aliases), `passages[{source, text}]`."""
    passages = record.get("passages") or []
    documents = [popqa_passage_document(p) for p in passages]
    example = Example(
        benchmark="popqa",
        example_id=str(_field(record, "row")),
        question=text_field(record, "question"),
        answers=answers_field(_field(record, "answers"), "answers"),
    )
    return example, [d for d in documents if d.text]


def parse_fever(record: Record, line: int) -> tuple[Example, list[Document]]:
    """FEVER paper_test: the claim in `question` (or `claim`), `label`, gold sentences in `pars`."""
    label = str(_field(record, "label")).strip().upper()
    if label not in FEVER_LABELS:
        raise RecordError(f"unknown FEVER label '{label}'")
    claim_key = "question" if "question" in record else "claim"
    pars = tuple(str(p).strip() for p in record.get("pars") or [] if str(p).strip())
    example = Example(
        benchmark="fever",
        example_id=str(_field(record, "id")),
        question=text_field(record, claim_key),
        answers=(label,),
        evidence=pars,
    )
    return example, [Document("fever", "", text) for text in pars]


def _qa_only_parser(benchmark: str) -> RecordParser:
    """A parser for the `qa_only` lists: question and answer(s), ids from the record position."""

    def parse(record: Record, line: int) -> tuple[Example, list[Document]]:
        example = Example(
            benchmark=benchmark,
            example_id=f"qa-{line}",
            question=text_field(record, "question"),
            answers=answers_field(_field(record, "answer"), "answer"),
        )
        return example, []

    return parse


BENCHMARK_FILES: dict[str, BenchmarkFile] = {
    spec.name: spec
    for spec in (
        BenchmarkFile("hotpotqa", "hotpotqa/hotpotqa_distractor_1700.jsonl", parse_hotpotqa),
        BenchmarkFile("2wikimultihopqa", "2wikimultihopqa/2wiki_with_context_153.jsonl", parse_2wikimultihopqa),
        BenchmarkFile("musique", "musique/musique_ans_with_paragraphs_350.jsonl", parse_musique),
        BenchmarkFile("popqa", "popqa/popqa_with_passages_2500.jsonl", parse_popqa),
        BenchmarkFile("fever", "fever/fever_paper_test_9000.jsonl", parse_fever),
    )
}

QA_ONLY_FILES: dict[str, BenchmarkFile] = {
    spec.name: spec
    for spec in (
        BenchmarkFile("hotpotqa-qa", "qa_only/hotpotqa_dev_qa.json", _qa_only_parser("hotpotqa-qa"), json_array=True),
        BenchmarkFile("2wikimultihopqa-qa", "qa_only/2wikimultihopqa_dev_qa.jsonl",
                      _qa_only_parser("2wikimultihopqa-qa")),
        BenchmarkFile("musique-qa", "qa_only/musique_dev_qa.jsonl", _qa_only_parser("musique-qa")),
        BenchmarkFile("popqa-qa", "qa_only/popqa_qa.jsonl", _qa_only_parser("popqa-qa")),
    )
}


# ---------------------------------------------------------------- reading whole files


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes (recorded in split manifests and imports)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_utf8(path: Path) -> str:
    """A file's text (a leading byte-order mark dropped); bytes that are not UTF-8 raise an
    `ImportFormatError` with their line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        decoded = error.object  # the bytes after any byte-order mark: `start` counts from there
        line = decoded[: error.start].count(b"\n") + 1
        message = f"not UTF-8 (byte {decoded[error.start]:#04x}): save the file as UTF-8"
        raise ImportFormatError(path, line, message) from None


def json_records(path: Path, json_array: bool) -> Iterator[tuple[int, Record]]:
    """(line or record number, record) pairs; malformed JSON raises with its line."""
    text = read_utf8(path)
    if json_array:
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            raise ImportFormatError(path, error.lineno, f"malformed JSON: {error.msg}") from None
        if not isinstance(items, list):
            raise ImportFormatError(path, 1, "unknown format: expected a JSON array of records")
        yield from enumerate(items, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise ImportFormatError(path, number, f"malformed JSON: {error.msg}") from None


def parse_records(
    path: Path, records: Iterable[tuple[int, Any]], parse: RecordParser
) -> tuple[tuple[Example, ...], tuple[Document, ...]]:
    """Examples in file order and the deduplicated documents of (line, record) pairs; a malformed
    record or a repeated id raises an `ImportFormatError` naming the file and line. A parser
    may return no example (a corpus record contributes documents only)."""
    examples: dict[str, Example] = {}
    documents: dict[str, Document] = {}
    for number, record in records:
        if not isinstance(record, dict):
            raise ImportFormatError(path, number, "unknown format: a record must be a JSON object")
        try:
            example, record_documents = parse(record, number)
        except RecordError as error:
            raise ImportFormatError(path, number, str(error)) from None
        if example is not None:
            if example.example_id in examples:
                raise ImportFormatError(path, number, f"duplicate id '{example.example_id}'")
            examples[example.example_id] = example
        for document in record_documents:
            documents.setdefault(document.doc_id, document)
    return tuple(examples.values()), tuple(documents.values())


def read_benchmark_file(spec: BenchmarkFile, path: Path) -> ImportedBenchmark:
    """Parse a whole benchmark file: examples in file order and the deduplicated corpus."""
    if not path.is_file():
        raise ImportFormatError(path, None, f"benchmark file for '{spec.name}' not found")
    examples, documents = parse_records(path, json_records(path, spec.json_array), spec.parse)
    if not examples:
        raise ImportFormatError(path, None, "no records found")
    return ImportedBenchmark(spec.name, path, file_sha256(path), examples, documents)


def read_benchmark(name: str, root: Path) -> ImportedBenchmark:
    """Read benchmark `name` (one of BENCHMARK_FILES or QA_ONLY_FILES) from the benchmarks dir."""
    spec = BENCHMARK_FILES.get(name) or QA_ONLY_FILES.get(name)
    if spec is None:
        known = ", ".join([*BENCHMARK_FILES, *QA_ONLY_FILES])
        raise InvalidInput(f"unknown benchmark '{name}' (known: {known})")
    return read_benchmark_file(spec, root / spec.relative_path)
