"""The baselines FORGE is compared with: the fixed arms, the per-query oracle (descriptive only),
the published routing baselines (BM25 thresholds, Adaptive-RAG, TierMem, Self-Routing, a
FrugalGPT-style cascade) and the linear floor `ridge_utility`. Adding one is a `Policy` subclass
here and one line in `forge_core.policies.registry.POLICIES`.
"""

from __future__ import annotations

import hashlib
import itertools
from abc import abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK, SUMMARY_NO_THINK
from forge_core.evidence.answering import ArmAnswer
from forge_core.policies.base import NOTHINK_ARMS, Policy
from forge_core.policies.context import LIVE_ROW, Decisions, EvalContext
from forge_core.policies.kinds import FIXED_ARM_KIND, ORACLE_KIND
from forge_core.policies.live_query import LiveQuery
from forge_core.routing.features import BLOCK_NAMES, Standardizer, is_hedging, is_idk, router_standardizer
from forge_core.routing.utility import oracle_actions

# sklearn takes seconds to import: the fits import it, so reading stored results never loads it
if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression, Ridge

RIDGE_ALPHAS = (1.0, 10.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)  # ridge_utility's dev grid
CORRECT_F1 = 0.5  # an answer with at least this F1 counts as correct (classifier labels)


class FixedArm(Policy):
    """Always the same arm (Always-Direct, Always-Summary, Always-Raw, or any arm)."""

    kind = FIXED_ARM_KIND

    def __init__(self, arm: str) -> None:
        self.arm = arm
        self.name = "always_" + arm.replace(":no_think", "").replace(":", "_")

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        return Decisions.single(np.full(len(rows), context.arm(self.arm)))

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        return await query.answer(self.arm)


class Oracle(Policy):
    """The per-query utility-maximizing arm, read from the outcomes (descriptive only)."""

    name = "oracle"
    kind = ORACLE_KIND
    deployable = False

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        return Decisions.single(oracle_actions(context.utility[rows]))


class BM25Threshold(Policy):
    """Two thresholds on the top-1 BM25 score split queries into three bands, each answered by a
    NoThink arm; thresholds and the band-to-arm assignment maximize dev utility."""

    name = "bm25_threshold"
    live_variant = "lite"

    def fit(self, context: EvalContext) -> None:
        dev = context.rows("dev")
        utility = context.utility[dev]
        best = (-np.inf, 0.0, 0.0, NOTHINK_ARMS)
        for low, high, bands in context.weight_free((self.name, "dev bands"), lambda: self._dev_bands(context, dev)):
            for order in itertools.permutations(NOTHINK_ARMS):
                actions = np.array([context.arm(a) for a in order])[bands]
                value = utility[np.arange(len(dev)), actions].mean()
                if value > best[0]:
                    best = (value, low, high, order)
        _, self.low, self.high, self.order = best

    @classmethod
    def _dev_bands(cls, context: EvalContext, dev: np.ndarray) -> list[tuple[float, float, np.ndarray]]:
        """Each candidate pair of thresholds with the band (0, 1, 2) of every dev row: weight-free, so
        made once per context and its `at` copies (a slider step only scores them)."""
        scores = context.feature("lite", "bm25_top1")[dev]
        candidates = np.unique(np.quantile(scores, np.linspace(0, 1, 11)))
        return [(low, high, cls._bands(scores, low, high, [0, 1, 2]))
                for low, high in itertools.combinations_with_replacement(candidates, 2)]

    @staticmethod
    def _bands(scores: np.ndarray, low: float, high: float, columns: list[int]) -> np.ndarray:
        return np.select([scores < low, scores < high], columns[:2], default=columns[2])

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        scores = context.feature("lite", "bm25_top1")[rows]
        return Decisions.single(self._bands(scores, self.low, self.high, [context.arm(a) for a in self.order]))


def _classifier(features: np.ndarray, labels: np.ndarray) -> tuple[LogisticRegression, Standardizer]:
    from sklearn.linear_model import LogisticRegression

    standardizer = Standardizer.fit(features, "train", embedding_dim=0)
    model = LogisticRegression(max_iter=2000, C=1.0)
    model.fit(standardizer.transform(features), labels)
    return model, standardizer


def structured_inputs(context: EvalContext) -> np.ndarray:
    """The structured Lite columns (question structure, BM25 statistics, cosine) of every row."""
    lite = context.features("lite")
    return lite[:, -len(BLOCK_NAMES["structural"]) - len(BLOCK_NAMES["retrieval"]) - 1:]


class ArmClassifier(Policy):
    """A logistic-regression classifier on the structured Lite features that picks one of
    `arm_names` per query, trained on `train_labels`; a constant arm when train has one label.

    The fit depends on the weights only through the train labels: it is made once per context (and
    its `at` copies) for each set of train labels, so weights that leave the labels as they are (a
    slider step, mostly) reuse it."""

    live_variant = "lite"
    arm_names: tuple[str, ...] = ()

    @abstractmethod
    def train_labels(self, context: EvalContext) -> np.ndarray:
        """[N] the index into `arm_names` each row should get."""

    def fit(self, context: EvalContext) -> None:
        self.columns = np.array([context.arm(arm) for arm in self.arm_names])
        train = context.rows("train")
        labels = self.train_labels(context)[train]
        key = (self.name, "train labels", hashlib.blake2b(labels.tobytes(), digest_size=16).digest())
        self.constant, self.model, self.standardizer = context.weight_free(
            key, lambda: self._fit(context, train, labels))

    @staticmethod
    def _fit(context: EvalContext, train: np.ndarray, labels: np.ndarray
             ) -> tuple[int | None, LogisticRegression | None, Standardizer | None]:
        """(constant label, None, None) when train has one label, else (None, model, standardizer)."""
        if len(np.unique(labels)) < 2:
            return int(labels[0]), None, None
        return None, *_classifier(structured_inputs(context)[train], labels)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        if self.constant is not None:
            return Decisions.single(np.full(len(rows), self.columns[self.constant]))
        labels = self.model.predict(self.standardizer.transform(structured_inputs(context)[rows]))
        return Decisions.single(self.columns[labels])


class AdaptiveRAG(ArmClassifier):
    """Adaptive-RAG style: a query-complexity classifier (structured question features) trained on
    the label "cheapest NoThink arm that answers correctly" (Raw when none does)."""

    name = "adaptive_rag"
    arm_names = NOTHINK_ARMS

    def train_labels(self, context: EvalContext) -> np.ndarray:
        correct = context.table.f1[:, [context.arm(arm) for arm in self.arm_names]] >= CORRECT_F1
        return np.where(correct.any(axis=1), correct.argmax(axis=1), len(self.arm_names) - 1)


class TierMem(ArmClassifier):
    """TierMem style, two tiers: Summary unless a classifier (structured + retrieval features)
    predicts that Raw's utility beats Summary's."""

    name = "tiermem"
    arm_names = (SUMMARY_NO_THINK, RAW_NO_THINK)

    def train_labels(self, context: EvalContext) -> np.ndarray:
        summary, raw = (context.arm(arm) for arm in self.arm_names)
        return (context.utility[:, raw] > context.utility[:, summary]).astype(int)


class SelfRouting(Policy):
    """Self-Routing: answer Direct; keep it when the host looks confident (no "I don't know", no
    hedging, probe confidence above a dev-tuned threshold), else escalate to Raw, paying both."""

    name = "self_routing"

    def fit(self, context: EvalContext) -> None:
        dev = context.rows("dev")
        best = (-np.inf, 1.0)
        for threshold in np.linspace(0, 1, 21):
            value = context.realized_utility(dev, self._decide(context, dev, threshold)).mean()
            if value > best[0]:
                best = (value, threshold)
        self.threshold = best[1]

    @staticmethod
    def _confident(context: EvalContext, rows: np.ndarray, threshold: float) -> np.ndarray:
        return (
            (context.feature("full", "greedy_idk")[rows] == 0)
            & (context.feature("full", "greedy_hedging")[rows] == 0)
            & (context.feature("full", "greedy_confidence")[rows] >= threshold)
        )

    def _decide(self, context: EvalContext, rows: np.ndarray, threshold: float) -> Decisions:
        confident = self._confident(context, rows, threshold)
        direct, raw = context.arm(DIRECT_NO_THINK), context.arm(RAW_NO_THINK)
        return context.probed_decisions(rows, np.where(confident, direct, raw))

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        return self._decide(context, rows, self.threshold)

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        context = await query.context("full")  # the greedy probe is the Direct answer itself
        confident = self._confident(context, LIVE_ROW, self.threshold)[0]
        return await query.answer(DIRECT_NO_THINK if confident else RAW_NO_THINK)


class FrugalCascade(Policy):
    """FrugalGPT style cascade Direct -> Summary -> Raw: stop at the first answer that looks
    reliable (not "I don't know", no hedging, at most a dev-tuned number of words); every
    earlier stage's tokens and calls are counted."""

    name = "frugal_cascade"
    STAGES = NOTHINK_ARMS

    def fit(self, context: EvalContext) -> None:
        dev = context.rows("dev")
        best = (-np.inf, 8)
        for max_words in (2, 3, 5, 8, 12, 20, 1000):
            value = context.realized_utility(dev, self._decide(context, dev, max_words)).mean()
            if value > best[0]:
                best = (value, max_words)
        self.max_words = best[1]

    def _answer_words(self, context: EvalContext) -> tuple[np.ndarray, np.ndarray]:
        """[N, stages] each stage's answer's word count, and whether it is free of "I don't know"
        and hedging: what `_reliable` reads, read once per context (it depends on no weight)."""
        def compute() -> tuple[np.ndarray, np.ndarray]:
            answers = context.table.answers[:, [context.arm(a) for a in self.STAGES]]
            words = np.vectorize(lambda text: len(text.split()), otypes=[int])(answers)
            plain = np.vectorize(_plain, otypes=[bool])(answers)
            return words, plain

        return context.weight_free((self.name,), compute)

    def _decide(self, context: EvalContext, rows: np.ndarray, max_words: int) -> Decisions:
        columns = [context.arm(a) for a in self.STAGES]
        words, plain = (values[rows] for values in self._answer_words(context))
        reliable = _short_enough(words, max_words) & plain  # `_reliable`, on arrays
        reliable[:, -1] = True  # the last stage always answers
        stage = reliable.argmax(axis=1)
        earlier = np.arange(len(columns))[None, :] < stage[:, None]  # [n, stages] the stages run before
        tokens_in, tokens_out = (np.where(earlier, tokens[rows][:, columns], 0.0).sum(axis=1)
                                 for tokens in (context.table.tokens_in, context.table.tokens_out))
        return Decisions(np.array(columns)[stage], tokens_in, tokens_out, stage)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        return self._decide(context, rows, self.max_words)

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        for arm in self.STAGES[:-1]:
            answer = await query.answer(arm)
            if _reliable(answer.answer, self.max_words):
                return answer
        return await query.answer(self.STAGES[-1])  # the last stage always answers


def _reliable(text: str, max_words: int) -> bool:
    return bool(_short_enough(len(text.split()), max_words)) and _plain(text)


def _short_enough(words: int | np.ndarray, max_words: int) -> bool | np.ndarray:
    """At least one word and at most `max_words` (a count, or an array of counts)."""
    return (words > 0) & (words <= max_words)


def _plain(text: str) -> bool:
    """Neither "I don't know" nor hedging."""
    return not is_idk(text) and not is_hedging(text)


class RidgeUtility(Policy):
    """A linear floor for the routers: ridge regression of every arm's utility on the Lite
    features, preprocessed exactly as the routers' (`router_standardizer`), route = the arm of
    highest predicted utility. The penalty `alpha` is the one of `RIDGE_ALPHAS` whose routing has
    the best dev utility (ties go to the larger penalty).

    The ridge solution is linear in its targets, so the regression of U = F1 - lambda_in c_in -
    lambda_out c_out is that of F1, c_in and c_out combined with the weights: those three are
    fitted once per context (`EvalContext.weight_free`) and only the combination and the choice of
    alpha follow the weights."""

    name = "ridge_utility"
    live_variant = "lite"

    def fit(self, context: EvalContext) -> None:
        self.standardizer, models = context.weight_free((self.name,), lambda: self.fit_components(context))
        self.weights = context.weights
        dev = context.rows("dev")
        x_dev = self.standardizer.transform(context.features("lite")[dev])
        dev_utility = context.utility[dev]
        best = (-np.inf, None)
        for alpha in sorted(RIDGE_ALPHAS, reverse=True):
            actions = self._predicted_utility(models[alpha], x_dev).argmax(axis=1)
            value = dev_utility[np.arange(len(dev)), actions].mean()
            if value > best[0]:
                best = (value, models[alpha])
        self.model = best[1]

    @staticmethod
    def fit_components(context: EvalContext) -> tuple[Standardizer, dict[float, Ridge]]:
        """The standardizer and, per alpha, a ridge fit of [F1 | c_in | c_out] on the train rows."""
        train = context.rows("train")
        features = context.features("lite")
        standardizer = router_standardizer(features[train], "lite", "train")
        c_in, c_out = context.normalizer.transform(context.table.tokens_in[train], context.table.tokens_out[train])
        targets = np.hstack([context.table.f1[train], c_in, c_out])
        x_train = standardizer.transform(features[train])
        from sklearn.linear_model import Ridge

        return standardizer, {alpha: Ridge(alpha=alpha).fit(x_train, targets) for alpha in RIDGE_ALPHAS}

    def _predicted_utility(self, model: Ridge, x: np.ndarray) -> np.ndarray:
        # `model.predict(x)` without its input checks (a slider step makes hundreds of these predictions)
        f1, c_in, c_out = np.split(x @ model.coef_.T + model.intercept_, 3, axis=1)
        return self.weights.utility(f1, c_in, c_out)

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        x = self.standardizer.transform(context.features("lite")[rows])
        return Decisions.single(self._predicted_utility(self.model, x).argmax(axis=1))
