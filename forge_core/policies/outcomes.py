"""What a policy's decisions score on evaluated rows: F1, EM, tokens, host calls and utility under
both accountings (`PolicyOutcome`), and the JSON summary every protocol reports for a policy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from forge_core.policies.base import Policy
from forge_core.policies.context import Decisions, EvalContext
from forge_core.routing.utility import boltzmann_target, oracle_actions
from forge_core.statistics import action_distribution, kl_divergence, macro, paired_bootstrap_ci


@dataclass(frozen=True)
class PolicyOutcome:
    """A policy's per-row results on the evaluated split, under both accountings."""

    name: str
    kind: str  # the policy's kind (`Policy.kind`)
    actions: np.ndarray  # [n]
    f1: np.ndarray  # [n]
    em: np.ndarray  # [n]
    answer_tokens: np.ndarray  # [n] tokens in + out of the answering call
    deploy_tokens: np.ndarray  # [n] tokens of every call the decision needs (probes, earlier stages, answer)
    calls: np.ndarray  # [n] host calls the decision needs on a new query
    answer_utility: np.ndarray  # [n] utility of the answering arm alone (the paper's Cached view)
    deploy_utility: np.ndarray  # [n] minus the cost of every earlier call
    accounting: str  # which of the two `utility` and `tokens` are
    answer_tokens_in: np.ndarray | None = None  # [n] input tokens of the answering call (its rest is output)
    prior_tokens_in: np.ndarray | None = None  # [n] input tokens of the calls before it

    @property
    def utility(self) -> np.ndarray:
        """[n] utility under the evaluation's accounting."""
        return self.deploy_utility if self.accounting == "deploy" else self.answer_utility

    @property
    def tokens(self) -> np.ndarray:
        """[n] token cost under the evaluation's accounting."""
        return self.deploy_tokens if self.accounting == "deploy" else self.answer_tokens

    @property
    def tokens_in(self) -> np.ndarray:
        """[n] the input tokens of `tokens` (what lambda_in prices)."""
        if self.answer_tokens_in is None or self.prior_tokens_in is None:
            raise ValueError(f"outcome of '{self.name}' was scored without its input tokens")
        return self.answer_tokens_in + (self.prior_tokens_in if self.accounting == "deploy" else 0.0)

    @property
    def tokens_out(self) -> np.ndarray:
        """[n] the output tokens of `tokens` (what lambda_out prices)."""
        return self.tokens - self.tokens_in


def score_decisions(context: EvalContext, rows: np.ndarray, policy: Policy, decisions: Decisions) -> PolicyOutcome:
    """Per-row scores and costs of a policy's decisions on `rows`."""
    table, index, actions = context.table, np.arange(len(rows)), decisions.actions
    answer_tokens = table.cost[rows, actions]
    answer_utility = context.utility[rows][index, actions]
    prior_cost = context.call_cost(decisions.prior_tokens_in, decisions.prior_tokens_out)
    return PolicyOutcome(
        name=policy.name, kind=policy.kind, actions=actions, f1=table.f1[rows, actions], em=table.em[rows, actions],
        answer_tokens=answer_tokens,
        deploy_tokens=answer_tokens + decisions.prior_tokens_in + decisions.prior_tokens_out,
        calls=1 + decisions.prior_calls, answer_utility=answer_utility, deploy_utility=answer_utility - prior_cost,
        accounting=context.accounting, answer_tokens_in=table.tokens_in[rows, actions],
        prior_tokens_in=decisions.prior_tokens_in)


def cost_summary(outcome: PolicyOutcome, benchmarks: np.ndarray, mask: np.ndarray | slice = slice(None)) -> dict:
    """Macro token costs (k tokens a query) under both accountings, `cost_k` being the one of the
    evaluation's accounting, and host calls a query; over the rows of `mask`."""
    def mean(values: np.ndarray) -> float:
        return macro(values[mask].astype(np.float64), benchmarks[mask])

    return {"cost_k": mean(outcome.tokens) / 1000.0, "deploy_cost_k": mean(outcome.deploy_tokens) / 1000.0,
            "answer_cost_k": mean(outcome.answer_tokens) / 1000.0, "calls_per_query": mean(outcome.calls)}


def summarize(outcome: PolicyOutcome, context: EvalContext, rows: np.ndarray, reference: PolicyOutcome | None) -> dict:
    """The JSON summary of one policy."""
    benchmarks = context.table.benchmarks[rows]
    target = boltzmann_target(context.utility[rows]).mean(axis=0)
    distribution = action_distribution(outcome.actions, len(context.table.arms))
    summary = {
        "kind": outcome.kind,
        "macro_f1": macro(outcome.f1, benchmarks),
        "macro_em": macro(outcome.em, benchmarks),
        "macro_utility": macro(outcome.utility, benchmarks),
        **cost_summary(outcome, benchmarks),
        "per_benchmark": {
            b: {"f1": float(outcome.f1[benchmarks == b].mean()), "em": float(outcome.em[benchmarks == b].mean()),
                **cost_summary(outcome, benchmarks, benchmarks == b), "queries": int((benchmarks == b).sum())}
            for b in np.unique(benchmarks)
        },
        "oracle_agreement": float((outcome.actions == oracle_actions(context.utility[rows])).mean()),
        "action_distribution": dict(zip(context.table.arms, distribution.round(4).tolist())),
        "kl_to_boltzmann_target": kl_divergence(target, distribution),
        "ci_vs_always_raw": list(paired_bootstrap_ci(outcome.f1, reference.f1, benchmarks)) if reference else None,
    }
    return summary


def policy_outcomes(context: EvalContext, rows: np.ndarray, policies: Sequence[Policy],
                    on_policy: Callable[[str], None] | None = None) -> dict[str, PolicyOutcome]:
    """Fit each policy on train/dev and score its decisions on `rows`."""
    outcomes = {}
    for policy in policies:
        if on_policy:
            on_policy(policy.name)
        policy.fit(context)
        outcomes[policy.name] = score_decisions(context, rows, policy, policy.decide(context, rows))
    return outcomes


