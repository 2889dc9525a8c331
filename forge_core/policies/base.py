"""The policy interface: a policy is fitted on train and dev rows only, then decides an arm for
each evaluated row. Its `Decisions` also carry the host calls a new query needs before the
answering one (the probes of a Full router and of Self-Routing, a cascade's earlier stages), so
that every policy pays for what it really runs (see the accounting in
`forge_core.policies.context`). `answer_live` deploys the same decision on a new query with real
host calls (the Fresh Online protocol, `forge_core.evaluation.fresh_online`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK, SUMMARY_NO_THINK
from forge_core.evidence.answering import ArmAnswer
from forge_core.policies.context import LIVE_ROW, Decisions, EvalContext
from forge_core.policies.kinds import BASELINE_KIND
from forge_core.policies.live_query import LiveQuery

NOTHINK_ARMS = (DIRECT_NO_THINK, SUMMARY_NO_THINK, RAW_NO_THINK)  # bands, cascade stages, the fallback's fixed arms


class Policy(ABC):
    """Picks one arm per query; `fit` may only read train and dev rows."""

    name: str = ""
    kind: str = BASELINE_KIND  # one of the kinds of `forge_core.policies.kinds`
    live_variant: str | None = None  # the feature variant `decide` reads on a new query
    live_embedder: str | None = None  # the embedder of those features (None: FORGE_EMBEDDER's)
    deployable = True  # False for a descriptive policy that needs every arm's outcome
    fresh_by_default = True  # False: Fresh Online answers it live only when named (`FRESH_ON_REQUEST`)

    def fit(self, context: EvalContext) -> None:
        """Tune on train/dev (no-op for policies without parameters)."""

    @abstractmethod
    def decide(self, context: EvalContext, rows: np.ndarray) -> Decisions:
        """The decision for each row."""

    async def answer_live(self, query: LiveQuery) -> ArmAnswer:
        """Answer a new query with real host calls: its live features, this policy's decision on
        them, then the chosen arm (the Fresh Online protocol)."""
        context = await query.context(self.live_variant, self.live_embedder)
        return await query.answer(context.table.arms[self.decide(context, LIVE_ROW).actions[0]])
