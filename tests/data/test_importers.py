"""Benchmark importers on the real files and on small malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge_core.data.importers import (
    BENCHMARK_FILES,
    QA_ONLY_FILES,
    ImportFormatError,
    popqa_passage_document,
    read_benchmark,
    read_benchmark_file,
)

EXPECTED = {"hotpotqa": 1700, "2wikimultihopqa": 153, "musique": 350, "popqa": 2500, "fever": 9000}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_real_files_give_expected_counts_and_corpora(benchmarks_root: Path, name: str) -> None:
    imported = read_benchmark(name, benchmarks_root)
    assert len(imported.examples) == EXPECTED[name]
    assert len(imported.documents) > 1000
    assert len({d.doc_id for d in imported.documents}) == len(imported.documents)
    assert all(e.question and e.answers for e in imported.examples)
    assert len(imported.source_sha256) == 64


def test_hotpotqa_record_fields(benchmarks_root: Path) -> None:
    first = read_benchmark("hotpotqa", benchmarks_root).examples[0]
    assert first.example_id == "5abf63f15542997ec76fd3ea"
    assert first.answers == ("October 1922",)
    assert len(first.evidence) == 2  # two supporting facts resolved to sentence text


def test_fever_labels_and_evidence(benchmarks_root: Path) -> None:
    fever = read_benchmark("fever", benchmarks_root)
    labels = {e.answers[0] for e in fever.examples}
    assert labels == {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}
    assert len(fever.documents) == 3428  # the distinct gold sentences (MANIFEST)


def test_musique_answers_include_aliases(benchmarks_root: Path) -> None:
    musique = read_benchmark("musique", benchmarks_root)
    assert any(len(e.answers) > 1 for e in musique.examples)


@pytest.mark.parametrize("name,count", [("hotpotqa-qa", 7264), ("2wikimultihopqa-qa", 12557),
                                        ("musique-qa", 2390), ("popqa-qa", 14001)])
def test_qa_only_lists(benchmarks_root: Path, name: str, count: int) -> None:
    imported = read_benchmark(name, benchmarks_root)
    assert len(imported.examples) == count
    assert imported.documents == ()


def test_popqa_titles_recovered_per_source() -> None:
    r1 = popqa_passage_document({"source": "search-r1-wiki18",
                                 "text": '(Title: "Lisa McRee") Lisa McRee is a journalist.'})
    psi = popqa_passage_document({"source": "psi-rag", "text": "George Rankin - \n George James Rankin was a soldier."})
    crag = popqa_passage_document({"source": "crag-correct", "text": "Henry Feilden was a politician."})
    assert (r1.title, r1.text) == ("Lisa McRee", "Lisa McRee is a journalist.")
    assert (psi.title, psi.text) == ("George Rankin", "George James Rankin was a soldier.")
    assert (crag.title, crag.text) == ("", "Henry Feilden was a politician.")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD_MUSIQUE = {"id": "a", "question": "Q?", "answer": "A", "answer_aliases": [], "paragraphs": [
    {"idx": 0, "title": "T", "paragraph_text": "Text.", "is_supporting": True}]}


@pytest.mark.parametrize(
    "lines,message",
    [
        ([json.dumps(GOOD_MUSIQUE), "{not json"], ":2: malformed JSON"),
        ([json.dumps({**GOOD_MUSIQUE, "question": ""})], ":1: field 'question' must be a non-empty string"),
        ([json.dumps({k: v for k, v in GOOD_MUSIQUE.items() if k != "answer"})], ":1: missing field 'answer'"),
        ([json.dumps(GOOD_MUSIQUE), json.dumps(GOOD_MUSIQUE)], ":2: duplicate id 'a'"),
        (["[1, 2]"], ":1: unknown format"),
        ([json.dumps({**GOOD_MUSIQUE, "paragraphs": "oops"})], ":1: field 'paragraphs' must be a list"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = write_lines(tmp_path / "musique.jsonl", lines)
    with pytest.raises(ImportFormatError) as error:
        read_benchmark_file(BENCHMARK_FILES["musique"], path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_fever_unknown_label(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "f.jsonl", [json.dumps({"id": 1, "question": "C.", "label": "MAYBE", "pars": []})])
    with pytest.raises(ImportFormatError, match=r":1: unknown FEVER label 'MAYBE'"):
        read_benchmark_file(BENCHMARK_FILES["fever"], path)


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="not found"):
        read_benchmark_file(BENCHMARK_FILES["fever"], tmp_path / "absent.jsonl")
    with pytest.raises(ImportFormatError, match="no records"):
        read_benchmark_file(BENCHMARK_FILES["fever"], write_lines(tmp_path / "e.jsonl", [""]))


def test_qa_only_array_must_be_a_list(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_text('{"question": "q"}')
    with pytest.raises(ImportFormatError, match="expected a JSON array"):
        read_benchmark_file(QA_ONLY_FILES["hotpotqa-qa"], path)
