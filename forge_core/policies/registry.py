"""Every policy an evaluation can name, in one registry (`POLICIES`), in the order the reports list
them. A baseline is a `Policy` class in `forge_core.policies.baselines` and one `Baseline` line
here; the FORGE routers are named by their feature variant (`TrainedRouter`: one checkpoint per
weight pair; `ConditionedRouter`: one cost-conditioned checkpoint for every weight pair), and the
dev fallback rule by the router it wraps (`DevFallback`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from forge_core.arms import DIRECT_NO_THINK, RAW_NO_THINK, SUMMARY_NO_THINK
from forge_core.errors import InvalidInput
from forge_core.policies.base import Policy
from forge_core.policies.baselines import (
    AdaptiveRAG,
    BM25Threshold,
    FixedArm,
    FrugalCascade,
    Oracle,
    RidgeUtility,
    SelfRouting,
    TierMem,
)
from forge_core.policies.gates import DARTGate, LogprobLadder, TARGGate
from forge_core.policies.routers import FallbackPolicy


@dataclass(frozen=True)
class Baseline:
    """A policy built from its class and arguments, fitted on each evaluation's train and dev rows."""

    cls: type[Policy]
    args: tuple = ()

    def build(self) -> Policy:
        """A fresh, unfitted instance."""
        return self.cls(*self.args)


@dataclass(frozen=True)
class TrainedRouter:
    """A FORGE router trained at the evaluation's cost weights (`forge eval` trains it when missing)."""

    variant: str  # its feature variant: "full", "lite" or "bge"


@dataclass(frozen=True)
class DevFallback:
    """The paper's dev fallback rule around a trained router (`FallbackPolicy`)."""

    router: str  # the registry name of the router it wraps


@dataclass(frozen=True)
class ConditionedRouter:
    """A cost-conditioned FORGE router: one checkpoint decides at any weights; it joins an
    evaluation when the store has one (`forge train --conditioned`), never trained on the fly."""

    variant: str  # its feature variant


PolicyEntry = Baseline | TrainedRouter | DevFallback | ConditionedRouter

POLICIES: dict[str, PolicyEntry] = {
    "always_direct": Baseline(FixedArm, (DIRECT_NO_THINK,)),
    "always_summary": Baseline(FixedArm, (SUMMARY_NO_THINK,)),
    "always_raw": Baseline(FixedArm, (RAW_NO_THINK,)),
    "bm25_threshold": Baseline(BM25Threshold),
    "adaptive_rag": Baseline(AdaptiveRAG),
    "tiermem": Baseline(TierMem),
    "self_routing": Baseline(SelfRouting),
    "frugal_cascade": Baseline(FrugalCascade),
    "targ": Baseline(TARGGate),
    "dart": Baseline(DARTGate),
    "logprob_ladder": Baseline(LogprobLadder),
    "ridge_utility": Baseline(RidgeUtility),
    "oracle": Baseline(Oracle),
    "forge_full": TrainedRouter("full"),
    "forge_lite": TrainedRouter("lite"),
    "bge_bm25_kl": TrainedRouter("bge"),
    FallbackPolicy.name_for("forge_full"): DevFallback("forge_full"),
    "forge_full_cond": ConditionedRouter("full"),
    "forge_lite_cond": ConditionedRouter("lite"),
}

E = TypeVar("E", Baseline, TrainedRouter, DevFallback, ConditionedRouter)


def registered(kind: type[E]) -> dict[str, E]:
    """The registry's entries of one kind, by name, in registry order."""
    return {name: entry for name, entry in POLICIES.items() if isinstance(entry, kind)}


def variants(kind: type[TrainedRouter] | type[ConditionedRouter]) -> dict[str, str]:
    """Router policy name -> its feature variant, for the trained or the conditioned routers."""
    return {name: entry.variant for name, entry in registered(kind).items()}


def check_policy_names(names: Sequence[str]) -> None:
    """Refuse names the registry does not know, with the known ones."""
    unknown = sorted(set(names) - set(POLICIES))
    if unknown:
        raise InvalidInput(f"unknown policies: {', '.join(unknown)} (known: {', '.join(POLICIES)})")


def build_baselines(names: Sequence[str] | None = None) -> list[Policy]:
    """Fresh instances of the named baselines (all by default)."""
    baselines = registered(Baseline)
    chosen = list(names or baselines)
    unknown = [n for n in chosen if n not in baselines]
    if unknown:
        raise InvalidInput(f"unknown policies: {', '.join(unknown)} (known: {', '.join(baselines)})")
    return [baselines[n].build() for n in chosen]


def has_dev_fallback(router_name: str) -> bool:
    """Whether the registry wraps this trained router in the dev fallback rule."""
    return any(entry.router == router_name for entry in registered(DevFallback).values())
