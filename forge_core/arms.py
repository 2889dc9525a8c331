"""The action alphabet: an arm is a (support, thinking) pair, indexed support-major.

Support order is direct, summary, raw; thinking order is no_think, cot, think_low, think_high.
`index = support * n_thinking + thinking`. K = 3 (warm start: the NoThink arms), 6 (non-thinking
hosts: NoThink and CoT) or 12 (thinking hosts: all four thinking modes).
"""

from __future__ import annotations

from dataclasses import dataclass

from forge_core.errors import InvalidInput

SUPPORTS: tuple[str, ...] = ("direct", "summary", "raw")
THINKING_MODES: tuple[str, ...] = ("no_think", "cot", "think_low", "think_high")
THINKING_BUDGETS: dict[str, int] = {"think_low": 1024, "think_high": 4096}
ALPHABET_SIZES: tuple[int, ...] = (3, 6, 12)

# The arms code names: the three NoThink arms (the warm-start alphabet and the fixed baselines).
DIRECT_NO_THINK = "direct:no_think"  # the question alone; its request is also the greedy probe's
SUMMARY_NO_THINK = "summary:no_think"  # the compressed passages
RAW_NO_THINK = "raw:no_think"  # the raw passages: Always-Raw's arm
NO_THINK_ARMS: tuple[str, ...] = (DIRECT_NO_THINK, SUMMARY_NO_THINK, RAW_NO_THINK)


@dataclass(frozen=True)
class Arm:
    """One action: which evidence to give the host and how much to let it reason."""

    support: str
    thinking: str

    @property
    def name(self) -> str:
        """The arm's name, e.g. "raw:no_think"."""
        return f"{self.support}:{self.thinking}"

    @property
    def thinking_budget(self) -> int | None:
        """The host reasoning budget in tokens, or None when host thinking is off."""
        return THINKING_BUDGETS.get(self.thinking)


def thinking_modes(n_arms: int) -> tuple[str, ...]:
    """The thinking modes of an alphabet of `n_arms` arms."""
    if n_arms not in ALPHABET_SIZES:
        raise InvalidInput(f"an alphabet has 3, 6 or 12 arms, not {n_arms}")
    return THINKING_MODES[: n_arms // len(SUPPORTS)]


def alphabet(n_arms: int) -> tuple[Arm, ...]:
    """All arms of an alphabet, in action-index order (support-major)."""
    modes = thinking_modes(n_arms)
    return tuple(Arm(support, thinking) for support in SUPPORTS for thinking in modes)


def arm_index(arm: Arm, n_arms: int) -> int:
    """The action index of `arm` in the alphabet of `n_arms` arms."""
    modes = thinking_modes(n_arms)
    if arm.thinking not in modes:
        raise InvalidInput(f"arm {arm.name} is not in the {n_arms}-arm alphabet")
    return SUPPORTS.index(arm.support) * len(modes) + modes.index(arm.thinking)


def parse_arm(name: str) -> Arm:
    """An arm from its name ("raw:no_think"), with a clear error for anything else."""
    support, _, thinking = name.partition(":")
    if support not in SUPPORTS or thinking not in THINKING_MODES:
        known = ", ".join(arm.name for arm in alphabet(12))
        raise InvalidInput(f"unknown arm '{name}' (known: {known})")
    return Arm(support, thinking)
