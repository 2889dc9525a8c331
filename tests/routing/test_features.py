"""Router features: exact structural, retrieval, probe and consistency values; the embedder;
standardization; assembly; computing and storing on a temporary store."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from forge_core.evidence.answering import Evidence, load_retriever, retrieve_evidence
from forge_core.evidence.embedders import DEFAULT_EMBEDDER, Embedder, embedder_name, load_embedder
from forge_core.evidence.passage_vectors import passage_vectors
from forge_core.evidence.retrieval import Retriever, ScoredDocument
from forge_core.records import ArmOutcome, Document, Example, ProbeOutcome
from forge_core.routing import features
from forge_core.routing.features import (
    FEATURE_VARIANTS,
    Standardizer,
    assemble_features,
    compute_features,
    consistency_features,
    entity_count,
    feature_names,
    features_for_question,
    greedy_features,
    probe_features,
    retrieval_features,
    structural_features,
    variant_kinds,
)
from forge_core.store import Store

NOW = datetime(2026, 1, 1)
MODEL = "all-MiniLM-L6-v2@onnx"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled MiniLM on ONNX Runtime, loaded once for the module (and shared with
    compute_features)."""
    return load_embedder(DEFAULT_EMBEDDER)


# ---------------------------------------------------------------- structural


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # words, wh, entities, comparison, temporal
        ("Barack Obama was born where?", (5, 1, 1, 0, 1)),
        ("Which film won the Academy Award for Best Picture in 1995?", (11, 1, 2, 0, 1)),
        ("Who is older, Tom Hanks or Meryl Streep?", (8, 1, 2, 1, 0)),
        ("Nikolaj Coster-Waldau worked with the Fox Broadcasting Company.", (8, 0, 2, 0, 0)),
        ('the 1990s band "The Verve" released which album?', (8, 1, 1, 0, 1)),
        ("Is the river longer than the canal?", (7, 0, 0, 1, 0)),
        ("Were both bands formed during the war?", (7, 0, 0, 1, 1)),
        ("whose  mother died in Rome", (5, 1, 1, 0, 1)),
        ("Paris is the capital of France.", (6, 0, 1, 0, 0)),
        ("The iPhone 15 costs 2023 dollars", (6, 0, 0, 0, 1)),
        ("Somewhat nothing happened", (3, 0, 0, 0, 0)),
        ("", (0, 0, 0, 0, 0)),
    ],
)
def test_structural_features_exact(question: str, expected: tuple[int, ...]) -> None:
    assert structural_features(question).tolist() == list(expected)


@pytest.mark.parametrize(
    ("question", "count"),
    [
        ("Which Beatles album came first?", 1),  # the first word joins the run of "Beatles"
        ("Are Paris, France and Rome in Europe?", 3),  # "Are Paris, France" is one run
        ("Who founded U.S. Steel in 1901?", 1),  # "U.S. Steel"; the year is no entity
        ("Lincoln?", 0),
        ("New York and New Jersey", 2),
    ],
)
def test_entity_count_rule(question: str, count: int) -> None:
    assert entity_count(question) == count


def test_whole_words_only() -> None:
    # "somewhat", "therefore", "whatever", "thanks", "moreover" and "1995x" are no matches
    assert structural_features("Somewhat therefore whatever thanks moreover 1995x").tolist() == [6, 0, 0, 0, 0]


# ---------------------------------------------------------------- retrieval


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([10.0, 8.0, 6.0, 4.0, 2.0], [10.0, 6.0, 2.0, math.sqrt(8.0)]),
        ([3.0], [3.0, 0.6, 3.0, 1.2]),  # padded to [3, 0, 0, 0, 0]
        ([], [0.0, 0.0, 0.0, 0.0]),
        ([1.0, 5.0, 5.0, 2.0, 2.0, 9.0], [9.0, 4.6, 4.0, math.sqrt(6.64)]),  # top five of six
    ],
)
def test_retrieval_features_exact(scores: list[float], expected: list[float]) -> None:
    np.testing.assert_allclose(retrieval_features(scores), expected, rtol=1e-6)


# ---------------------------------------------------------------- probes and self-consistency


def test_probe_features_distinct_samples() -> None:
    values = probe_features(
        "Who wrote Hamlet?",
        "Answer: William Shakespeare.\nHe wrote it around 1600.",
        7,
        ["Shakespeare", "**william shakespeare**", "I think it was Christopher Marlowe"],
    )
    # greedy answer "William Shakespeare": F1 2/3, 1 and 0 against the samples
    greedy = [2, 7, 0, 0, 0, 0, 5 / 9]
    consistency = [1 / 3, 1, 3, 1 / 3]  # sample words 1 + 2 + 6
    np.testing.assert_allclose(values, greedy + consistency, rtol=1e-6)


def test_probe_features_hedged_numeric_answer() -> None:
    values = probe_features(
        "When did the Hamlet premiere happen in 1990?",
        "I don\u2019t know, maybe 1990.",
        9,
        ["1990", "1990.", "1991"],
    )
    # answer tokens i, dont, know, maybe, 1990: one of five is in the question;
    # F1 against "1990" is 2 * (1/5 * 1) / (1/5 + 1) = 1/3, against "1991" 0
    greedy = [5, 9, 1, 1, 1 / 5, 1, 2 / 9]
    consistency = [2 / 3, 2 / 3, 1, 0]
    np.testing.assert_allclose(values, greedy + consistency, rtol=1e-6)


def test_consistency_of_identical_answers() -> None:
    values = consistency_features("Paris", ["paris", "Paris.", "The Paris"])
    np.testing.assert_allclose(values, [1, 1 / 3, 4 / 3, 1], rtol=1e-6)


@pytest.mark.parametrize(
    ("text", "idk", "hedging"),
    [
        ("I do not know.", 1, 0),
        ("Unknown", 1, 0),
        ("I'm not sure, perhaps Oslo", 1, 1),
        ("The text does not say; it is not provided.", 1, 0),
        ("I cannot answer that", 1, 0),
        ("There is no information about it", 1, 0),
        ("I am unable to tell", 1, 0),
        ("It is likely Bergen", 0, 1),
        ("Probably Bergen", 0, 1),
        ("It might be Oslo", 0, 1),
        ("The result is unclear", 0, 1),
        ("Oslo", 0, 0),
        ("The Mighty Ducks, a well-known unlikely hit", 0, 0),
    ],
)
def test_idk_and_hedging_flags(text: str, idk: int, hedging: int) -> None:
    assert (features.is_idk(text), features.is_hedging(text)) == (idk, hedging)
    values = greedy_features("Which city?", text, 3, [text])
    assert (values[2], values[3]) == (idk, hedging)


def test_probe_features_from_outcomes_need_all_four() -> None:
    outcomes = [probe("greedy", "Oslo"), probe("sample1", "Oslo"), probe("sample2", "Bergen")]
    with pytest.raises(ValueError, match="sample3"):
        features.probe_features_from_outcomes("Which city?", outcomes)
    failed = [*outcomes, probe("sample3", "", error="timeout")]
    with pytest.raises(ValueError, match="sample3"):
        features.probe_features_from_outcomes("Which city?", failed)


# ---------------------------------------------------------------- embedder


def test_embedder_dimension_and_cosine(embedder: Embedder) -> None:
    vectors = embedder.embed(["Paris is in France", "Paris is in France", "Bananas are yellow"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    assert embedder.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-5)
    assert float(vectors[0] @ vectors[2]) < 0.5
    assert embedder.embed([]).shape[0] == 0


def test_cross_modal_cosine_of_identical_text(embedder: Embedder) -> None:
    passage = Document("t", "Paris", "is in France")
    evidence = Evidence("Paris is in France", (ScoredDocument(passage, 4.0),))
    empty = Evidence("Paris is in France", ())
    passages = {"t": passage_vectors(Retriever.from_documents([passage]))}
    with_passage, without = features.independent_blocks(
        ["Paris is in France", "Paris is in France"], [evidence, empty], embedder, passages)
    assert with_passage["cosine"][0] == pytest.approx(1.0, abs=1e-5)
    assert without["cosine"][0] == 0.0
    assert without["retrieval"].tolist() == [0, 0, 0, 0]


def test_embedder_name_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORGE_EMBEDDER", raising=False)
    assert embedder_name() == MODEL
    assert variant_kinds("bge") == (f"embedding:{MODEL}", "retrieval", f"cosine:{MODEL}")
    monkeypatch.setenv("FORGE_EMBEDDER", "all-MiniLM-L6-v2")  # the PyTorch runtime keeps its own name
    assert variant_kinds("bge") == ("embedding:all-MiniLM-L6-v2", "retrieval", "cosine:all-MiniLM-L6-v2")
    monkeypatch.setenv("FORGE_EMBEDDER", "BAAI/bge-base-en-v1.5")
    assert embedder_name() == "bge-base-en-v1.5"
    assert embedder_name("/models/bge-small-en-v1.5/") == "bge-small-en-v1.5"


# ---------------------------------------------------------------- variants and standardization


def test_feature_names_and_dims() -> None:
    dims = {variant: len(feature_names(variant, 384)) for variant in FEATURE_VARIANTS}
    assert dims == {"full": 405, "lite": 394, "bge": 389}
    names = feature_names("full", 2)
    assert names[:3] == ["embedding_0", "embedding_1", "question_words"]
    assert names[-1] == "sc_greedy_match"
    with pytest.raises(ValueError, match="unknown feature variant"):
        feature_names("huge", 384)


@pytest.mark.parametrize("split", ["dev", "test", "all"])
def test_standardizer_refuses_other_splits(split: str) -> None:
    with pytest.raises(ValueError, match="train"):
        Standardizer.fit(np.ones((2, 3)), split, embedding_dim=1)


def test_standardizer_exact_values() -> None:
    x = np.array([[0.5, -0.5, 1.0, 10.0], [0.25, 0.75, 3.0, 10.0]], dtype=np.float32)
    standardizer = Standardizer.fit(x, "train", embedding_dim=2)
    assert standardizer.mean.tolist() == [2.0, 10.0]
    assert standardizer.std.tolist() == [1.0, 1.0]  # the constant column keeps std 1
    out = standardizer.transform(x)
    assert out.dtype == np.float32
    assert out.tolist() == [[0.5, -0.5, -1.0, 0.0], [0.25, 0.75, 1.0, 0.0]]
    restored = Standardizer.from_dict(standardizer.to_dict())
    assert restored.transform(x).tolist() == out.tolist()
    with pytest.raises(ValueError, match="4 columns"):
        standardizer.transform(x[:, :3])


# ---------------------------------------------------------------- stores


def arm(example_id: str, host: str = "h", error: str | None = None) -> ArmOutcome:
    return ArmOutcome(host, "hotpotqa", example_id, "direct:no_think", "x", "x", None if error else 1.0,
                      None if error else 1.0, 10, 2, 0, 5.0, error, 1, "hash", NOW, NOW)


def probe(name: str, answer: str, example_id: str = "q1", error: str | None = None) -> ProbeOutcome:
    return ProbeOutcome("h", "hotpotqa", example_id, name, answer, 10, 3, 5.0, error, "hash", NOW)


@pytest.fixture()
def tiny_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """Three hotpotqa questions over four passages; q1 and q2 have arm outcomes on host h,
    q1 all four probes, q2 a failed sample."""
    monkeypatch.setenv("FORGE_CACHE_DIR", str(tmp_path / "cache"))
    store = Store(tmp_path / "forge.duckdb")
    examples = [
        Example("hotpotqa", "q1", "Which river flows through Paris?", ("Seine",)),
        Example("hotpotqa", "q2", "Who is older, Ada Lovelace or Charles Babbage?", ("Charles Babbage",)),
        Example("hotpotqa", "q3", "When was the Eiffel Tower built?", ("1889",)),
    ]
    documents = [
        Document("hotpotqa", "Seine", "The Seine is a river that flows through Paris."),
        Document("hotpotqa", "Ada Lovelace", "Ada Lovelace was born in 1815."),
        Document("hotpotqa", "Charles Babbage", "Charles Babbage was born in 1791."),
        Document("hotpotqa", "Eiffel Tower", "The Eiffel Tower was built in 1889 in Paris."),
    ]
    store.import_benchmark("hotpotqa", tmp_path / "hotpotqa.json", "sha", examples, documents, [])
    for outcome in (arm("q1"), arm("q2"), arm("q1", host="other")):
        store.write_arm_outcome(outcome)
    for name, answer in (("greedy", "Seine"), ("sample1", "The Seine"), ("sample2", "Seine."), ("sample3", "Loire")):
        store.write_probe_outcome(probe(name, answer))
    store.write_probe_outcome(probe("greedy", "Babbage", "q2"))
    store.write_probe_outcome(probe("sample1", "", "q2", error="timeout"))
    return store


def test_assemble_features_order_and_missing(tmp_path: Path) -> None:
    store = Store(tmp_path / "forge.duckdb")
    rows = []
    for index, example_id in enumerate(("a", "b")):
        rows += [
            ("", "popqa", example_id, "embedding:fake", [float(index), 0.5]),
            ("", "popqa", example_id, "retrieval", [index + 1.0, 2.0, 3.0, 4.0]),
            ("", "popqa", example_id, "cosine:fake", [0.25]),
        ]
    assert store.write_features(rows) == 6
    matrix = assemble_features(store, "h", "bge", [("popqa", "b"), ("popqa", "a")], embedder="fake")
    assert matrix.dtype == np.float32
    assert matrix.tolist() == [[1.0, 0.5, 2.0, 2.0, 3.0, 4.0, 0.25], [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 0.25]]
    keys = [("popqa", "a"), ("popqa", "b"), ("popqa", "c")]
    with pytest.raises(ValueError, match=r"1 of 3 queries lack bge features.*popqa/c.*forge features --host h"):
        assemble_features(store, "h", "bge", keys, embedder="fake")
    with pytest.raises(ValueError, match=r"3 of 3 queries lack lite features"):  # no structural rows
        assemble_features(store, "h", "lite", keys, embedder="fake")


def test_features_of_a_host_without_outcomes_name_the_next_step(tiny_store: Store) -> None:
    with pytest.raises(ValueError, match=r"host 'typo' has no arm outcomes: run `forge enumerate --host typo` first "
                                         r"\(hosts with outcomes: h, other\)"):
        compute_features(tiny_store, "typo")


def test_compute_features_stores_and_is_idempotent(tiny_store: Store, embedder: Embedder) -> None:
    progress: list[tuple[int, int]] = []
    report = compute_features(tiny_store, "h", on_progress=lambda done, total: progress.append((done, total)),
                              embedder=DEFAULT_EMBEDDER)
    assert {k: report[k] for k in ("queries", "computed_shared", "computed_probe", "without_probes")} == {
        "queries": 2, "computed_shared": 2, "computed_probe": 1, "without_probes": 1}
    assert progress[-1] == (3, 3)
    assert tiny_store.feature_keys("", f"embedding:{MODEL}") == {("hotpotqa", "q1"), ("hotpotqa", "q2")}
    assert tiny_store.feature_keys("h", "probe") == {("hotpotqa", "q1")}
    counts = tiny_store.table_counts()

    keys = [("hotpotqa", "q2"), ("hotpotqa", "q1")]
    lite = assemble_features(tiny_store, "h", "lite", keys, embedder=DEFAULT_EMBEDDER)
    assert lite.shape == (2, 394)
    assert lite[0, 384:389].tolist() == [8, 1, 2, 1, 0]  # q2's structural features
    full = assemble_features(tiny_store, "h", "full", keys[1:], embedder=DEFAULT_EMBEDDER)
    # greedy "Seine" vs samples "The Seine", "Seine.", "Loire"; question tokens hold no "seine"
    np.testing.assert_allclose(full[0, -11:], [1, 3, 0, 0, 0, 0, 2 / 3, 2 / 3, 2 / 3, 4 / 3, 2 / 3], rtol=1e-6)
    with pytest.raises(ValueError, match="1 of 2 queries lack full features"):
        assemble_features(tiny_store, "h", "full", keys, embedder=DEFAULT_EMBEDDER)

    rerun = compute_features(tiny_store, "h", embedder=DEFAULT_EMBEDDER)
    assert (rerun["computed_shared"], rerun["computed_probe"]) == (0, 0)
    assert tiny_store.table_counts() == counts
    other = compute_features(tiny_store, "other", embedder=DEFAULT_EMBEDDER)
    assert (other["queries"], other["computed_shared"]) == (1, 0)  # shared with host h


def test_live_features_equal_stored_ones(tiny_store: Store, embedder: Embedder) -> None:
    compute_features(tiny_store, "h", embedder=DEFAULT_EMBEDDER)
    question = "Which river flows through Paris?"
    retriever = load_retriever(tiny_store, "hotpotqa")
    evidence = retrieve_evidence(retriever, question)
    probes = [probe(name, answer) for name, answer in
              (("greedy", "Seine"), ("sample1", "The Seine"), ("sample2", "Seine."), ("sample3", "Loire"))]
    for variant, outcomes in (("full", probes), ("lite", None), ("bge", None)):
        stored = assemble_features(tiny_store, "h", variant, [("hotpotqa", "q1")], embedder=DEFAULT_EMBEDDER)[0]
        live = features_for_question(question, retriever, evidence, outcomes, variant=variant,
                                     embedder=DEFAULT_EMBEDDER)
        np.testing.assert_allclose(live, stored, atol=1e-5)
    assert features_for_question(question, retriever, evidence, embedder=DEFAULT_EMBEDDER).shape == (394,)
    with pytest.raises(ValueError, match="probe outcomes"):
        features_for_question(question, retriever, evidence, variant="full", embedder=DEFAULT_EMBEDDER)
