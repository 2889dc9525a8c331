"""The cost-matched mix of fixed arms that `forge serve --mix ARM=SHARE,ARM=SHARE` answers with.

Each request is answered under one of the mix's arms, drawn per request from its question: the
sha256 of the normalized last user message (whitespace collapsed, case folded) read as a number
in [0, 1) and set against the cumulative shares. The same question always gets the same arm, and
a replay of many distinct questions spends the arms in the mix's proportions, as the mix that
`forge decide --budget-tokens T` measures does (`forge_core.policies.mix_hull`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from forge_core.arms import Arm, arm_index, parse_arm
from forge_core.errors import InvalidInput

SHARE_TOLERANCE = 1e-6  # the shares must sum to 1 within this
DRAW_BITS = 64  # bits of the question's sha256 the draw reads


def question_draw(question: str) -> float:
    """The question's draw in [0, 1): a hash of its normalized text (whitespace collapsed, case folded)."""
    normalized = " ".join(question.split()).casefold()
    digest = hashlib.sha256(normalized.encode()).digest()
    return int.from_bytes(digest[:DRAW_BITS // 8], "big") / 2.0 ** DRAW_BITS


@dataclass(frozen=True)
class ArmMix:
    """Fixed arms and the share of the questions each answers."""

    arms: tuple[Arm, ...]
    shares: tuple[float, ...]

    @property
    def option(self) -> str:
        """The mix as `forge serve --mix` takes it (shares to 9 significant digits)."""
        return mix_option([arm.name for arm in self.arms], self.shares)

    def arm_for(self, question: str) -> tuple[Arm, float]:
        """The arm that answers `question` and the question's draw."""
        draw = question_draw(question)
        total = 0.0
        for arm, share in zip(self.arms, self.shares):
            total += share
            if draw < total:
                return arm, draw
        return self.arms[-1], draw  # the shares' sum may fall a rounding short of 1


def draw_record(option: str, arm: str, draw: float) -> dict[str, Any]:
    """What a record of a request answered under a mix names: the mix (`ArmMix.option`), the arm
    drawn and the draw (the traffic log, the answer's `forge` object, `/v1/route`)."""
    return {"mix": option, "mix_arm": arm, "mix_draw": round(draw, 9)}


def mix_attributes(record: dict[str, Any]) -> dict[str, Any]:
    """A span's mix attributes (`forge_core.telemetry`) from a record holding a `draw_record`; {} for a
    request under no mix."""
    return {"forge.mix": record["mix"], "forge.mix_draw": record["mix_draw"]} if record.get("mix") else {}


def mix_option(arms: list[str], shares: tuple[float, ...] | list[float]) -> str:
    """`ARM=SHARE,ARM=SHARE`, the shares to 9 significant digits (they sum to 1 within 1e-8)."""
    return ",".join(f"{arm}={share:.9g}" for arm, share in zip(arms, shares))


def parse_mix(text: str, n_arms: int) -> ArmMix:
    """`ARM=SHARE,...` as an `ArmMix` of the host's alphabet of `n_arms`; refuses, in one line, an
    unknown or repeated arm, a share outside (0, 1] and shares that do not sum to 1 within 1e-6."""
    arms, shares = [], []
    for part in text.split(","):
        name, equals, share_text = part.strip().partition("=")
        if not equals:
            raise InvalidInput(f"--mix takes ARM=SHARE,ARM=SHARE (e.g. direct:no_think=0.3,summary:no_think=0.7), "
                               f"not {part.strip()!r}")
        arm = parse_arm(name.strip())
        arm_index(arm, n_arms)  # refuses an arm outside the host's alphabet
        if arm in arms:
            raise InvalidInput(f"--mix names {arm.name} twice")
        try:
            share = float(share_text)
        except ValueError:
            raise InvalidInput(f"--mix share of {arm.name} is a number, not {share_text!r}") from None
        if not (math.isfinite(share) and 0.0 < share <= 1.0):
            raise InvalidInput(f"--mix share of {arm.name} is {share_text}: a share lies in (0, 1]")
        arms.append(arm)
        shares.append(share)
    if abs(sum(shares) - 1.0) > SHARE_TOLERANCE:
        raise InvalidInput(f"--mix shares sum to {sum(shares):.9g}: they must sum to 1 (within {SHARE_TOLERANCE:g})")
    return ArmMix(tuple(arms), tuple(shares))
