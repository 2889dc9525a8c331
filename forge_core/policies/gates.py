"""The training-free gates from the literature, as baselines: each reads one or two cheap probes
of the query and sets one threshold (or picks one arm) on the training folds only.

- TARG (arXiv 2511.09803): retrieve only when the no-context draft's prefix margin (the mean gap
  between the top-1 and top-2 token logprobs over its first `TARG_PREFIX_TOKENS` tokens) is below
  a threshold; else answer with the draft itself (`direct:no_think`).
- DART (arXiv 2606.23181): think (`cot`) only when two no-think drafts disagree (the greedy Direct
  draft and a sample at temperature 0.7), on the support form that fits the training folds best.
- A calibrated log-probability ladder (arXiv 2606.29959): the draft's mean token logprob, Platt-
  calibrated on train rows into a probability that Direct answers correctly, chooses Direct (high),
  Summary (k=1's compact context) or Raw (k=5's full context) by two thresholds set on dev rows.

Every probe is charged under the deployment's accounting: the draft (the `direct:no_think` request
with logprobs, so it costs nothing more when Direct answers) and DART's second sample. TARG and the
ladder are fitted on the training-fold rows with a stored draft (`forge gate-probes`); a query
without one gets the gate's uncertain branch (retrieve; Raw) with no probe charged, and
`draft_coverage` says how many have one. DART's two drafts are the stored Full-feature probes.

They are compared baselines, not deployed (`forge serve` serves routers and fixed arms), and a Fresh
Online run answers them live only when named (`Policy.fresh_by_default`): their draft is a live call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK, SUMMARY_NO_THINK
from forge_core.evidence.answering import ArmAnswer
from forge_core.evidence.scoring import token_f1
from forge_core.policies.base import Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.policies.live_query import LiveQuery

TARG_PREFIX_TOKENS = 16  # the draft's prefix TARG's margin is averaged over
DRAFT_AGREE_F1 = 0.5  # two drafts agree when their token F1 (SQuAD normalization) is at least this
CORRECT_F1 = 0.5  # the ladder calibrates P(Direct's F1 >= this)
THRESHOLD_QUANTILES = np.linspace(0.0, 1.0, 21)  # candidate thresholds: these quantiles of the fit rows' scores
LADDER_QUANTILES = np.linspace(0.0, 1.0, 11)  # the ladder's candidate thresholds (pairs of them)
DART_SUPPORTS = ("direct", "summary", "raw")
SECOND_DRAFT = "sample1"  # DART's second no-think draft: the first self-consistency sample


# ---------------------------------------------------------------- the decision rules, on arrays


def prefix_margin(top1: Sequence[float], top2: Sequence[float], prefix: int = TARG_PREFIX_TOKENS) -> float:
    """Mean top-1 minus top-2 logprob over the first `prefix` tokens (-inf for an empty draft)."""
    first, second = np.asarray(top1[:prefix], dtype=float), np.asarray(top2[:prefix], dtype=float)
    return float((first - second).mean()) if len(first) else float("-inf")


def mean_logprob(top1: Sequence[float]) -> float:
    """The draft's length-normalized sequence logprob (-inf for an empty draft)."""
    values = np.asarray(top1, dtype=float)
    return float(values.mean()) if len(values) else float("-inf")


def drafts_agree(first: str, second: str) -> bool:
    """DART's equivalence: the drafts' token F1 under SQuAD normalization is at least `DRAFT_AGREE_F1`."""
    return token_f1(first, [second]) >= DRAFT_AGREE_F1 if second.strip() else False


def best_threshold(scores: np.ndarray, below: np.ndarray, above: np.ndarray, candidates: np.ndarray) -> float:
    """The threshold t of `candidates` maximizing mean(below where score < t, else above); ties go
    to the smallest t (the fewest rows sent below)."""
    values = [np.where(scores < t, below, above).mean() for t in candidates]
    return float(candidates[int(np.argmax(values))])


def threshold_candidates(scores: np.ndarray, quantiles: np.ndarray = THRESHOLD_QUANTILES) -> np.ndarray:
    """Sorted unique quantiles of the finite scores, and +inf (every row below)."""
    finite = scores[np.isfinite(scores)]
    inner = np.quantile(finite, quantiles) if len(finite) else np.array([])
    return np.unique(np.append(inner, np.inf))


def ladder_steps(probability: np.ndarray, high: float, low: float) -> np.ndarray:
    """Per row the ladder's step: 0 (Direct) at probability >= high, 1 (Summary) at >= low, else 2 (Raw)."""
    return np.select([probability >= high, probability >= low], [0, 1], default=2)


def best_ladder(probability: np.ndarray, utility: np.ndarray, candidates: np.ndarray) -> tuple[float, float]:
    """(high, low), high >= low from `candidates`, maximizing the mean of `utility[row, step]`
    ([n, 3]: Direct, Summary, Raw); ties go to the first pair in (high, low) ascending order."""
    rows = np.arange(len(probability))
    best = (-np.inf, 1.0, 0.0)
    for i, high in enumerate(candidates):
        for low in candidates[: i + 1]:
            value = utility[rows, ladder_steps(probability, high, low)].mean()
            if value > best[0]:
                best = (value, float(high), float(low))
    return best[1], best[2]


def platt_fit(x: np.ndarray, y: np.ndarray, iterations: int = 50, l2: float = 1e-3) -> tuple[float, float]:
    """(a, b) of P(y=1 | x) = sigmoid(a x + b) by Newton's method on the log loss with a small L2
    penalty on a (finite for separable data); x finite."""
    a, b = 0.0, float(np.log((y.mean() + 1e-6) / (1 - y.mean() + 1e-6)))
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(a * x + b)))
        w = p * (1 - p)
        gradient = np.array([((p - y) * x).sum() + l2 * a, (p - y).sum()])
        hessian = np.array([[(w * x * x).sum() + l2, (w * x).sum()], [(w * x).sum(), w.sum() + 1e-9]])
        step = np.linalg.solve(hessian, gradient)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-10:
            break
    return float(a), float(b)


def platt(x: np.ndarray, a: float, b: float) -> np.ndarray:
    """The calibrated probability sigmoid(a x + b); 0 where x is not finite (no draft, an empty one)."""
    finite = np.isfinite(x)
    with np.errstate(over="ignore"):
        return np.where(finite, 1.0 / (1.0 + np.exp(-(a * np.where(finite, x, 0.0) + b))), 0.0)


# ---------------------------------------------------------------- the probes, per evaluated row


@dataclass(frozen=True)
class DraftSignals:
    """Per row of a context: the gates' draft (stored by `forge gate-probes`) and DART's second draft."""

    has_draft: np.ndarray  # [N] bool: a draft with logprobs is stored
    prefix_margin: np.ndarray  # [N] TARG's score (-inf without a draft)
    mean_logprob: np.ndarray  # [N] the ladder's score (-inf without a draft)
    tokens_in: np.ndarray  # [N] the draft call's tokens (0 without a draft)
    tokens_out: np.ndarray
    agree: np.ndarray  # [N] bool: the greedy draft and the second draft agree (DART)
    second_in: np.ndarray  # [N] the second draft's tokens
    second_out: np.ndarray


def draft_signals(context: EvalContext) -> DraftSignals:
    """The signals of every row, read once per context (they depend on no weight)."""
    return context.weight_free(("draft_signals",), lambda: _read_signals(context))


def _read_signals(context: EvalContext) -> DraftSignals:
    n = len(context.table.keys)
    drafts = context.store.draft_logprobs(context.table.host)
    by_key = {(row.benchmark, row.example_id): row for row in drafts.itertuples(index=False)}
    probes = context.store.probe_outcomes(context.table.host)
    second = probes[(probes["probe"] == SECOND_DRAFT) & probes["error"].isna()] if not probes.empty else probes
    seconds = {(row.benchmark, row.example_id): row for row in second.itertuples(index=False)}
    direct = context.table.answers[:, context.arm(DIRECT_NO_THINK)]
    signals = {name: np.zeros(n) for name in ("tokens_in", "tokens_out", "second_in", "second_out")}
    margin, logprob = np.full(n, -np.inf), np.full(n, -np.inf)
    has, agree = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    for i, key in enumerate(context.table.keys):
        if (draft := by_key.get(key)) is not None:
            has[i] = True
            margin[i], logprob[i] = prefix_margin(draft.top1, draft.top2), mean_logprob(draft.top1)
            signals["tokens_in"][i], signals["tokens_out"][i] = draft.tokens_in, draft.tokens_out
        if (sample := seconds.get(key)) is not None:
            agree[i] = drafts_agree(str(direct[i]), str(sample.answer))
            signals["second_in"][i], signals["second_out"][i] = sample.tokens_in, sample.tokens_out
    return DraftSignals(has, margin, logprob, agree=agree, **signals)


def draft_coverage(context: EvalContext, rows: np.ndarray) -> int:
    """How many of `rows` have a stored draft (the rows the draft gates decide by their signal)."""
    return int(draft_signals(context).has_draft[rows].sum())


def fit_rows(context: EvalContext) -> np.ndarray:
    """The training folds' rows (train and dev): what a gate's one threshold is set on."""
    return np.sort(np.concatenate([context.rows("train"), context.rows("dev")]))


def _charge(context: EvalContext, tokens_in: np.ndarray, tokens_out: np.ndarray) -> np.ndarray:
    """The utility charge of probe calls under the context's accounting (none under `answer`)."""
    if context.accounting == "answer":
        return np.zeros(len(tokens_in))
    return context.call_cost(tokens_in, tokens_out)


# ---------------------------------------------------------------- the policies


class TARGGate(Policy):
    """TARG: answer with the no-context draft unless its prefix margin is below a threshold, then
    retrieve (the retrieval arm, Summary or Raw, and the threshold maximize the training folds'
    utility, the draft charged on every retrieving row)."""

    name = "targ"
    fresh_by_default = False  # its probes are enumerated offline; answered live when named

    def fit(self, context: EvalContext) -> None:
        signals = draft_signals(context)
        rows = fit_rows(context)
        rows = rows[signals.has_draft[rows]]
        if not len(rows):  # no draft on the training folds: the gate cannot be set, it always retrieves
            self.threshold, self.retrieve_arm = np.inf, RAW_NO_THINK
            return
        scores = signals.prefix_margin[rows]
        candidates = threshold_candidates(scores)
        best = (-np.inf, np.inf, RAW_NO_THINK)
        for arm in (SUMMARY_NO_THINK, RAW_NO_THINK):
            below = self._retrieving_utility(context, rows, arm)
            above = context.utility[rows, context.arm(DIRECT_NO_THINK)]
            threshold = best_threshold(scores, below, above, candidates)
            value = np.where(scores < threshold, below, above).mean()
            if value > best[0]:
                best = (value, threshold, arm)
        _, self.threshold, self.retrieve_arm = best

    def _retrieving_utility(self, context: EvalContext, rows: np.ndarray, arm: str) -> np.ndarray:
        signals = draft_signals(context)
        probe = _charge(context, signals.tokens_in[rows], signals.tokens_out[rows])
        return context.utility[rows, context.arm(arm)] - probe

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        signals = draft_signals(context)
        retrieve = signals.prefix_margin[rows] < self.threshold  # -inf without a draft: retrieve
        actions = np.where(retrieve, context.arm(self.retrieve_arm), context.arm(DIRECT_NO_THINK))
        probed = retrieve & signals.has_draft[rows]  # the draft is the Direct answer when kept
        return Decisions(actions, np.where(probed, signals.tokens_in[rows], 0.0),
                         np.where(probed, signals.tokens_out[rows], 0.0), probed.astype(np.int64))

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        draft = await query.draft()
        margin = prefix_margin(*_top_two(draft.top_logprobs))
        return await query.answer(self.retrieve_arm if margin < self.threshold else DIRECT_NO_THINK)


class DARTGate(Policy):
    """DART: two no-think drafts (the greedy Direct draft and a sample at temperature 0.7); answer
    without thinking when they agree, with `cot` when they disagree, on the support form whose
    gated arms have the best training-fold utility. Both drafts are charged (the greedy one is the
    `direct:no_think` answer itself when that arm answers)."""

    name = "dart"
    fresh_by_default = False  # its probes are enumerated offline; answered live when named

    def fit(self, context: EvalContext) -> None:
        rows = fit_rows(context)
        values = [context.realized_utility(rows, self._decide(context, rows, support)).mean()
                  for support in DART_SUPPORTS]
        self.support = DART_SUPPORTS[int(np.argmax(values))]

    def _decide(self, context: EvalContext, rows: np.ndarray, support: str) -> Decisions:
        signals = draft_signals(context)
        agree = signals.agree[rows]
        actions = np.where(agree, context.arm(f"{support}:no_think"), context.arm(f"{support}:cot"))
        direct = context.arm(DIRECT_NO_THINK)
        greedy_apart = actions != direct
        table = context.table
        return Decisions(actions, signals.second_in[rows] + np.where(greedy_apart, table.tokens_in[rows, direct], 0.0),
                         signals.second_out[rows] + np.where(greedy_apart, table.tokens_out[rows, direct], 0.0),
                         1 + greedy_apart.astype(np.int64))

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        return self._decide(context, rows, self.support)

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        greedy, second = await query.answer(DIRECT_NO_THINK), await query.second_draft()
        agree = drafts_agree(greedy.answer, second.text)
        return await query.answer(f"{self.support}:{'no_think' if agree else 'cot'}")


LADDER_ARMS = (DIRECT_NO_THINK, SUMMARY_NO_THINK, RAW_NO_THINK)  # the ladder's steps: k = 0, compact, full


class LogprobLadder(Policy):
    """The calibrated log-probability ladder: P(Direct correct) from the draft's mean token
    logprob (Platt scaling fitted on train rows), then Direct at P >= high, Summary at P >= low,
    else Raw, the two thresholds maximizing dev utility with the draft charged where it does not answer."""

    name = "logprob_ladder"
    fresh_by_default = False  # its probes are enumerated offline; answered live when named

    def fit(self, context: EvalContext) -> None:
        signals = draft_signals(context)
        train = context.rows("train")
        calibrate = train[signals.has_draft[train]]
        correct = (context.table.f1[calibrate, context.arm(DIRECT_NO_THINK)] >= CORRECT_F1).astype(float)
        self.a, self.b = platt_fit(signals.mean_logprob[calibrate], correct) if len(calibrate) else (0.0, 0.0)
        dev = context.rows("dev")
        dev = dev[signals.has_draft[dev]]
        if not len(dev):  # no draft on the dev rows: every query climbs to Raw
            self.high = self.low = np.inf
            return
        probability = self.probability(signals.mean_logprob[dev])
        self.high, self.low = best_ladder(probability, self._step_utility(context, dev),
                                          np.unique(np.append(np.quantile(probability, LADDER_QUANTILES), 1.01)))

    def probability(self, logprob: np.ndarray) -> np.ndarray:
        """The calibrated probability that Direct answers correctly (0 without a draft)."""
        return platt(logprob, self.a, self.b)

    def _step_utility(self, context: EvalContext, rows: np.ndarray) -> np.ndarray:
        signals = draft_signals(context)
        probe = _charge(context, signals.tokens_in[rows], signals.tokens_out[rows])
        utility = context.utility[rows][:, [context.arm(arm) for arm in LADDER_ARMS]]
        return utility - np.where(signals.has_draft[rows], probe, 0.0)[:, None] * np.array([0.0, 1.0, 1.0])

    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        signals = draft_signals(context)
        steps = ladder_steps(self.probability(signals.mean_logprob[rows]), self.high, self.low)
        actions = np.array([context.arm(arm) for arm in LADDER_ARMS])[steps]
        probed = (steps > 0) & signals.has_draft[rows]
        return Decisions(actions, np.where(probed, signals.tokens_in[rows], 0.0),
                         np.where(probed, signals.tokens_out[rows], 0.0), probed.astype(np.int64))

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        draft = await query.draft()
        probability = self.probability(np.array([mean_logprob(_top_two(draft.top_logprobs)[0])]))
        return await query.answer(LADDER_ARMS[int(ladder_steps(probability, self.high, self.low)[0])])


def _top_two(top_logprobs: tuple[tuple[float, ...], ...]) -> tuple[list[float], list[float]]:
    """A live draft's per-token top-1 and top-2 logprobs (as `forge gate-probes` stores them)."""
    return ([top[0] for top in top_logprobs if top],
            [top[1] if len(top) > 1 else float("-inf") for top in top_logprobs if top])

