"""A guard's rule: answer with the fallback arm on every query, except where the router chooses
another arm with a margin of at least a threshold held out for a stated risk.

The router's margin is its implied utility advantage in utility units, tau * (log pi(chosen) -
log pi(runner-up)) (`forge_core.routing.confidence`). How the threshold is chosen (`risk_threshold`,
`calibrated_guard`) and why: `forge_core.policies.guard`, which fits a guard on a fold's dev rows;
`forge_core.reports.checkpoint_guard` fits one around a stored checkpoint for the Live query and
`forge serve --guard`. Here is what serving needs: the rule applied to one routed query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from forge_core.errors import InvalidInput
from forge_core.routing.confidence import confidence

GUARD_ALPHA = 0.2  # the risk a guard is fitted for: at most this share of its deviations lose utility
GUARD_FALLBACKS = ("arm", "mix")  # a guard falls back to the best fixed arm or to the cost-matched mix


@dataclass(frozen=True)
class Guard:
    """A fitted guard: deviate from `fallback_arm` where the router's margin is at least `threshold`."""

    fallback_arm: str  # the best fixed arm on the rows it was fitted on; for a mix, the arm a query drew
    threshold: float  # margin (utility units) a deviation needs; inf: never deviate
    alpha: float  # the risk it was fitted for
    calibration_deviations: int  # dev rows where the router chose another arm than the fallback
    calibration_losses: int  # of those, rows where the router's arm had lower utility
    mix: str | None = None  # the fallback is the arm this mix of fixed arms draws for each query (ARM=SHARE,...)

    def deviates(self, actions: np.ndarray, margin: np.ndarray, fallback: int | np.ndarray) -> np.ndarray:
        """Per row: whether the guard follows the router (another arm than the row's fallback, margin
        at least the threshold)."""
        return (np.asarray(actions) != fallback) & (np.asarray(margin, dtype=np.float64) >= self.threshold)

    def holds(self, router_arm: str, margin: float) -> bool:
        """Whether a query the router sends to `router_arm` with this margin is held at the fallback."""
        return router_arm != self.fallback_arm and margin < self.threshold

    def drawn(self, arm: str) -> Guard:
        """This guard for one query whose mix drew `arm` as its fallback."""
        return replace(self, fallback_arm=arm)

    def summary(self) -> str:
        """One line: the risk, the fallback, the threshold and the dev deviations it was fitted on."""
        threshold = f"threshold {self.threshold:+.3f} utility" if np.isfinite(self.threshold) else "never deviates"
        fallback = self.fallback_arm if self.mix is None else _mix_words(self.mix)
        return (f"risk {self.alpha:.0%}, fallback {fallback}, {threshold}, from "
                f"{self.calibration_deviations} deviations on the dev queries, {self.calibration_losses} losing")

    def to_json(self, router_arm: str, margin: float) -> dict[str, Any]:
        """The guard and what it did to one query (a served answer's `guard` field, its traffic record)."""
        return {"fallback_arm": self.fallback_arm, "threshold": self.threshold if np.isfinite(self.threshold) else None,
                "mix": self.mix, "alpha": self.alpha, "held": self.holds(router_arm, margin),
                "why": self.why(router_arm, margin)}

    def why(self, router_arm: str, margin: float) -> str:
        """One line: why a query with this router arm and margin was deviated or held at the fallback."""
        if router_arm == self.fallback_arm:
            return f"the router chose the fallback {self._fallback()} itself"
        if not np.isfinite(self.threshold):
            return (f"held at the fallback {self._fallback()}: no margin cleared the risk {self.alpha:g} on the "
                    "held-out dev queries, so the guard never deviates")
        if not self.holds(router_arm, margin):
            return (f"deviated to {router_arm}: margin {margin:+.3f} utility is at least the threshold "
                    f"{self.threshold:+.3f} (risk {self.alpha:g})")
        return (f"held at the fallback {self._fallback()}: margin {margin:+.3f} utility for {router_arm} is below "
                f"the threshold {self.threshold:+.3f} (risk {self.alpha:g})")

    def _fallback(self) -> str:
        """The fallback in words: the arm, and whether a mix drew it (`summary` names the mix's shares)."""
        return self.fallback_arm if self.mix is None else f"{self.fallback_arm} (drawn from the mix)"


def _mix_words(mix: str) -> str:
    """A mix as `--mix` takes it (`ARM=SHARE,...`) in words: "the mix summary:no_think 69%, raw:no_think 31%"."""
    parts = (part.rpartition("=") for part in mix.split(","))
    return "the mix " + ", ".join(f"{arm} {float(share):.0%}" for arm, _, share in parts)


def risk_threshold(margin: np.ndarray, loses: np.ndarray, alpha: float) -> float:
    """The lowest margin threshold whose deviations, and those of every higher threshold, have
    (losses + 1) / (deviations + 1) <= alpha (see the module docstring); inf when none does.
    `margin` and `loses` are per calibration deviation."""
    margin, loses = np.asarray(margin, dtype=np.float64), np.asarray(loses, dtype=bool)
    threshold = np.inf
    for value in np.unique(margin)[::-1]:  # highest first
        above = margin >= value
        deviations = int(above.sum())
        if alpha * (deviations + 1) < 1 - 1e-12:  # too few deviations to pass even without a loss: go on
            continue
        if (loses[above].sum() + 1) / (deviations + 1) > alpha:
            break
        threshold = float(value)
    return threshold


def calibrated_guard(actions: np.ndarray, margin: np.ndarray, utility: np.ndarray, fallback: int | np.ndarray,
                     fallback_name: str, alpha: float = GUARD_ALPHA, mix: str | None = None) -> Guard:
    """The guard whose threshold `risk_threshold` picks on calibration rows: the router's `actions`
    and `margin` there, every arm's `utility` on them ([rows, arms]), the fallback arm's index (one,
    or one per row: the arm a `mix` drew for each) and the fallback's name."""
    actions = np.asarray(actions)
    rows = np.arange(len(actions))
    fallback = np.broadcast_to(fallback, actions.shape)
    deviating = actions != fallback
    loses = utility[rows, actions] < utility[rows, fallback]
    threshold = risk_threshold(np.asarray(margin)[deviating], loses[deviating], alpha)
    return Guard(fallback_name, threshold, alpha, int(deviating.sum()), int(loses[deviating].sum()), mix)


def check_guard_options(risk: float | None, fallback: str) -> None:
    """Refuse, in one line, a `--guard` risk outside (0, 1), a `--guard-fallback` other than arm or
    mix, or a mix fallback without a guard."""
    if fallback not in GUARD_FALLBACKS:
        raise InvalidInput(f"--guard-fallback is {' or '.join(GUARD_FALLBACKS)}, not {fallback!r}")
    if risk is None and fallback != "arm":
        raise InvalidInput("--guard-fallback is the fallback of a guard: give --guard RISK with it")
    if risk is not None and not 0 < risk < 1:
        raise InvalidInput(f"--guard is the risk the guard is fitted for, a share in (0, 1), not {risk:g}")


def guarded_arm(probabilities: dict[str, float], tau: float, guard: Guard | None) -> str:
    """The arm a query is answered with: the router's choice (the most probable arm), or the guard's
    fallback where the guard holds it (`Guard.holds` at the router's margin over its runner-up)."""
    router_arm = max(probabilities, key=probabilities.get)
    if guard is None or not guard.holds(router_arm, router_margin(probabilities, router_arm, tau)):
        return router_arm
    return guard.fallback_arm


def router_margin(probabilities: dict[str, float], router_arm: str, tau: float) -> float:
    """The router's margin for its arm in utility units (0 with no other arm to compare)."""
    margin = confidence(probabilities, router_arm, tau).margin
    return 0.0 if margin is None else margin


def guard_record(guard: Guard | None, probabilities: dict[str, float], tau: float) -> dict[str, Any] | None:
    """What `guard` did to a query routed with these probabilities (`Guard.to_json` at the router's
    arm and margin); None without a guard or a router's probabilities."""
    if guard is None or not probabilities:
        return None
    router_arm = max(probabilities, key=probabilities.get)
    return guard.to_json(router_arm, router_margin(probabilities, router_arm, tau))


def guard_attributes(record: dict[str, Any] | None) -> dict[str, Any]:
    """A span's guard attributes (`forge_core.telemetry`): held or not, and the fallback; {} without a guard."""
    if record is None:
        return {}
    return {"forge.guard_held": record["held"], "forge.guard_fallback": record["fallback_arm"]}
