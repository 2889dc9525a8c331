"""`forge data import-file`: a user's own questions in JSON lines, CSV or Parquet, split like the
built-ins, written all or nothing; every bad file is one line naming file, line and field, exit 2."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow
import pyarrow.parquet
import pytest

from forge_core import cli
from forge_core.data.catalog import known_benchmarks
from forge_core.data.importing import import_user_file
from forge_core.data.splits import SPLIT_SEEDS, assign_splits
from forge_core.data.user_files import read_user_file
from forge_core.records import BENCHMARKS
from forge_core.store import Store, StoreError

from support.user_files import city_records, write_jsonl


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """`forge ARGS` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["forge", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_jsonl_import_splits_like_the_builtins_and_reruns_as_a_no_op(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    path = write_jsonl(tmp_path / "capitals.jsonl", city_records())
    result = import_user_file(store, path, "capitals")
    assert (result.added, result.examples, result.documents) == (True, 12, 12)
    imported = read_user_file(path, "capitals")
    for seed in SPLIT_SEEDS:
        expected = assign_splits("capitals", [f"cap-{i}" for i in range(12)], seed, imported.source_sha256).splits
        stored = {i: split for split in ("train", "dev", "test")
                  for i in store.split_ids("capitals", split, seed)}
        assert stored == expected
    assert store.examples("capitals", ["cap-1"])[0].answers == ("Rome",)
    assert store.documents("capitals")[0].text == "Paris is the capital and largest city of France."
    before = store.table_counts()
    assert import_user_file(store, path, "capitals").added is False
    assert store.table_counts() == before
    assert known_benchmarks(store) == (*BENCHMARKS, "capitals")


def test_csv_and_parquet_with_a_corpus_file(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"title": "Italy", "text": "Rome is the capital of Italy."},
                                                     {"text": "Paris is the capital of France."}])
    csv_path = tmp_path / "questions.csv"
    csv_path.write_text('id,question,answers\n7,What is the capital of Italy?,Rome\n'
                        '8,"What is the capital of France?","[""Paris"", ""City of Paris""]"\n')
    csv_read = read_user_file(csv_path, "from-csv", corpus)
    with_bom = tmp_path / "excel.csv"
    with_bom.write_bytes(b"\xef\xbb\xbf" + csv_path.read_bytes())  # what spreadsheets write as "CSV UTF-8"
    assert read_user_file(with_bom, "from-csv", corpus).examples == csv_read.examples
    assert [e.example_id for e in csv_read.examples] == ["7", "8"]
    assert csv_read.examples[1].answers == ("Paris", "City of Paris")
    assert [(d.title, d.benchmark) for d in csv_read.documents] == [("Italy", "from-csv"), ("", "from-csv")]
    parquet_path = tmp_path / "questions.parquet"
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(city_records()), parquet_path)
    parquet_read = read_user_file(parquet_path, "from-parquet")
    assert len(parquet_read.examples) == 12 and parquet_read.examples[0].answers == ("Paris",)
    assert parquet_read.documents[0].title == "France"
    with_other_corpus = read_user_file(csv_path, "from-csv", write_jsonl(tmp_path / "c2.jsonl", [{"text": "x"}]))
    assert with_other_corpus.source_sha256 != csv_read.source_sha256


def test_changed_file_is_refused_and_nothing_written(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.duckdb")
    path = write_jsonl(tmp_path / "capitals.jsonl", city_records())
    import_user_file(store, path, "capitals")
    before = store.table_counts()
    write_jsonl(path, city_records()[:11])
    with pytest.raises(StoreError, match="changed since 'capitals' was imported"):
        import_user_file(store, path, "capitals")
    assert store.table_counts() == before


def _drop(key: str) -> Callable[[list], list]:
    def change(records: list) -> list:
        del records[2][key]
        return records
    return change


def _set(key: str, value: object) -> Callable[[list], list]:
    def change(records: list) -> list:
        records[2][key] = value
        return records
    return change


JSONL_CASES = {
    "missing question": (_drop("question"), "bad.jsonl:3: missing field 'question'"),
    "empty question": (_set("question", "  "), "bad.jsonl:3: field 'question' must be a non-empty string"),
    "empty answers": (_set("answers", []), "bad.jsonl:3: missing answer: field 'answers' is empty"),
    "answers of the wrong type": (_set("answers", 42),
                                  "bad.jsonl:3: field 'answers' must be a string or a list of strings"),
    "an answer of the wrong type": (_set("answers", ["Madrid", 7]),
                                    "bad.jsonl:3: field 'answers' must be a string or a list of strings"),
    "id of the wrong type": (_set("id", [1]), "bad.jsonl:3: field 'id' must be a non-empty string or an integer"),
    "duplicate id": (_set("id", "cap-0"), "bad.jsonl:3: duplicate id 'cap-0'"),
    "contexts of the wrong type": (_set("contexts", "Madrid is in Spain"),
                                   "bad.jsonl:3: field 'contexts' must be a list of {title, text} objects"),
    "context without text": (_set("contexts", [{"title": "Spain"}]),
                             "bad.jsonl:3: field 'contexts[0].text' must be a non-empty string"),
    "record not an object": (lambda records: records[:2] + [["a list"]] + records[3:],
                             "bad.jsonl:3: unknown format: a record must be a JSON object"),
}


def assert_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path,
                   args: list[str], expected: str) -> None:
    """The import exits 2 with one line holding `expected`, and the store is unchanged."""
    store = Store(tmp_path / "store.duckdb")
    monkeypatch.setenv("FORGE_STORE", str(store.path))
    before = store.table_counts()
    code, out, err = run_cli(monkeypatch, capsys, "data", "import-file", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert expected in err
    assert store.table_counts() == before


@pytest.mark.parametrize("case", list(JSONL_CASES))
def test_bad_jsonl_record_is_one_line_exit_2_nothing_written(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    change, expected = JSONL_CASES[case]
    path = write_jsonl(tmp_path / "bad.jsonl", change(city_records()))
    assert_refused(monkeypatch, capsys, tmp_path, [str(path), "--name", "capitals"], expected)


def test_bad_json_non_utf8_and_unknown_format(tmp_path: Path, monkeypatch, capsys) -> None:
    good = "".join(json.dumps(record) + "\n" for record in city_records()[:3])
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(good + '{"question": "Q", "answers": \n')
    assert_refused(monkeypatch, capsys, tmp_path, [str(bad_json), "--name", "x"], "bad.jsonl:4: malformed JSON")
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(good.encode() + '{"question": "Où est Zürich?", "answers": "Suisse"}\n'.encode("latin-1"))
    assert_refused(monkeypatch, capsys, tmp_path, [str(latin1), "--name", "x"], "latin1.jsonl:4: not UTF-8 (byte 0xf9)")
    latin1.write_bytes(b"\xef\xbb\xbf" + latin1.read_bytes())
    assert_refused(monkeypatch, capsys, tmp_path, [str(latin1), "--name", "x"], "latin1.jsonl:4: not UTF-8 (byte 0xf9)")
    text = tmp_path / "questions.txt"
    text.write_text(good)
    assert_refused(monkeypatch, capsys, tmp_path, [str(text), "--name", "x"],
                   "questions.txt: unknown format (extension '.txt'): use --format jsonl, csv or parquet")
    assert_refused(monkeypatch, capsys, tmp_path, [str(text), "--name", "x", "--format", "xml"],
                   "unknown format ('xml')")


def test_a_record_without_answers_is_a_question_without_gold(tmp_path: Path) -> None:
    records = city_records()
    del records[0]["answers"]
    records[1]["answers"] = None
    read = read_user_file(write_jsonl(tmp_path / "capitals.jsonl", records), "capitals")
    assert read.examples[0].answers == () and read.examples[1].answers == () and read.examples[2].answers == ("Madrid",)


def test_bad_csv_parquet_and_corpus_files(tmp_path: Path, monkeypatch, capsys) -> None:
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text('question,answers\nWhat is the capital of Italy?,Rome\n'
                        'What is the capital of Spain?,"[""Madrid"", 7]"\n')
    assert_refused(monkeypatch, capsys, tmp_path, [str(csv_path), "--name", "x"],
                   "bad.csv:3: field 'answers' must be a string or a list of strings")
    parquet_path = tmp_path / "bad.parquet"
    records = city_records()
    records[4]["answers"] = []
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(records), parquet_path)
    assert_refused(monkeypatch, capsys, tmp_path, [str(parquet_path), "--name", "x"],
                   "bad.parquet:5: missing answer: field 'answers' is empty")
    not_parquet = tmp_path / "broken.parquet"
    not_parquet.write_text("not parquet")
    assert_refused(monkeypatch, capsys, tmp_path, [str(not_parquet), "--name", "x"],
                   "broken.parquet: not a readable Parquet file")
    questions = write_jsonl(tmp_path / "q.jsonl", [{"question": "Q?", "answers": "A"}])
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"title": "T", "text": "fine"}, {"title": "T", "text": ""}])
    assert_refused(monkeypatch, capsys, tmp_path, [str(questions), "--name", "x", "--corpus", str(corpus)],
                   "corpus.jsonl:2: field 'record.text' must be a non-empty string")
    assert_refused(monkeypatch, capsys, tmp_path, [str(questions), "--name", "x"],
                   "q.jsonl: no passages to retrieve from: give records 'contexts' or a --corpus file")
    assert_refused(monkeypatch, capsys, tmp_path, [str(tmp_path / "missing.jsonl"), "--name", "x"],
                   "missing.jsonl: file not found")


@pytest.mark.parametrize(("name", "expected"), [
    ("hotpotqa", "'hotpotqa' is a built-in benchmark: choose another --name"),
    ("popqa-qa", "'popqa-qa' is a built-in benchmark"),
    ("My Questions", "invalid benchmark name 'My Questions'"),
    ("", "invalid benchmark name ''"),
])
def test_bad_names_are_refused(name: str, expected: str, tmp_path: Path, monkeypatch, capsys) -> None:
    path = write_jsonl(tmp_path / "capitals.jsonl", city_records())
    assert_refused(monkeypatch, capsys, tmp_path, [str(path), "--name", name], expected)


def test_cli_import_reports_and_json(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("FORGE_STORE", str(tmp_path / "store.duckdb"))
    path = write_jsonl(tmp_path / "capitals.jsonl", city_records())
    code, _, err = run_cli(monkeypatch, capsys, "data", "import-file", str(path), "--name", "capitals")
    assert code == 0 and "capitals: 12 examples, 12 documents (imported)" in err
    code, out, _ = run_cli(monkeypatch, capsys, "data", "import-file", str(path), "--name", "capitals", "--json")
    assert code == 0
    assert json.loads(out) == {"benchmark": "capitals", "added": False, "examples": 12, "documents": 12}
