"""A router recipe: how routers were trained, the identity that binds a decision's out-of-fold
evidence to the checkpoint it serves.

A recipe is what training controls and a router's quality depends on: Stage 1's settings (its warm
start on the paper's three NoThink arms or on the whole alphabet), whether Stage 2 follows and with
which settings, the cost conditioning's weight draws, the alphabet, the embedder, the training seed
and the retriever configuration. A crossfit run measures one recipe, or two (a Stage-2 run reports
its Stage-1 parents as `<router>_stage1`); a checkpoint is of one (a Stage-2 checkpoint's Stage 1 is
its parent's). Torch-free: the command line reads it at start-up.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from forge_core.identity import canonical_hash
from forge_core.routing.conditioning import CostConditioning
from forge_core.routing.utility import CostWeights
from forge_core.training.settings import PAPER_WARM_START_ARMS, Stage1Config, Stage2Config

RECIPE_VERSION = 1  # layout of a recipe's identity: bump when it changes
STAGE1_PARENT_SUFFIX = "_stage1"  # a Stage-2 crossfit run's name for a router's Stage-1 parent
# Stage-1 config keys stored under older names (lineages keep `arms` for `warm_start_arms`)
OLDER_STAGE1_KEYS = {"arms": "warm_start_arms"}
UNTRAINED_KEYS = ("seed", "log_every")  # a stage config's keys that do not change what it trains


@dataclass(frozen=True)
class Recipe:
    """How a router was trained (see the module docstring). `stage1`, `stage2` and `conditioning`
    are canonical JSON (every knob, defaults filled in), so recipes compare and hash exactly."""

    warm_start_arms: int  # Stage 1 on the paper's 3 NoThink arms, or on the whole alphabet
    stage: int  # 1, or 2: GRPO on top of Stage 1
    draws: int | None  # a cost-conditioned router's weight draws per query and epoch (None: per-weight only)
    n_arms: int  # the alphabet
    embedder: str  # the question embedder of the features
    seed: int  # the training seed
    retriever_hash: str  # the evidence's retriever configuration ("": the default BM25)
    stage1: str  # Stage 1's whole config (seed aside), canonical JSON
    stage2: str  # Stage 2's whole config (seed aside) for a Stage-2 recipe, else ""
    conditioning: str  # the conditioning's whole config, else ""

    @functools.cached_property
    def recipe_id(self) -> str:
        """A short stable id, e.g. "recipe-3f2a9c01b7de"; hashed once per recipe (`forge decide` compares
        every measured run's recipe with the chosen one at each slider step)."""
        return "recipe-" + canonical_hash("recipe", RECIPE_VERSION, dataclasses.asdict(self))[:12]

    @property
    def label(self) -> str:
        """One line a person reads, e.g. "paper's Stage 1 (3 NoThink arms), 1 weight draw, 6 arms"."""
        warm = ("paper's Stage 1 (3 NoThink arms)" if self.warm_start_arms == PAPER_WARM_START_ARMS
                else f"whole-alphabet Stage 1 ({self.warm_start_arms} arms)")
        stage2 = f" + Stage 2 ({json.loads(self.stage2)['steps']} steps)" if self.stage == 2 else ""
        draws = "" if self.draws is None else f", {self.draws} weight draw{'s' * (self.draws != 1)}"
        return f"{warm}{stage2}{draws}, {self.n_arms} arms, seed {self.seed}, {self.embedder}"

    @property
    def short_label(self) -> str:
        """What tells this recipe's runs from another's in a picker, e.g. "paper's Stage 1 + Stage 2
        (5000 steps), seed 0" (the alphabet and embedder, shared by a host's runs, left out)."""
        warm = ("paper's Stage 1" if self.warm_start_arms == PAPER_WARM_START_ARMS
                else f"whole-alphabet Stage 1 ({self.warm_start_arms} arms)")
        stage2 = f" + Stage 2 ({json.loads(self.stage2)['steps']} steps)" if self.stage == 2 else ""
        return f"{warm}{stage2}, seed {self.seed}"

    def train_options(self, conditioned: bool) -> str:
        """The `forge train` options that train a router of this recipe (beside host, variant and
        weights)."""
        options = f"--stage {self.stage} --warm-arms {self.warm_start_arms} --seed {self.seed}"
        if self.stage == 2:
            options += f" --steps {json.loads(self.stage2)['steps']}"
        if conditioned and self.draws is not None:
            options += f" --conditioned --draws {self.draws}"
        return options

    def serves(self, checkpoint: Recipe) -> bool:
        """Whether a checkpoint of recipe `checkpoint` is a router of this recipe: equal in every
        part, the conditioning aside for a router of one weight pair (it has none)."""
        if checkpoint.draws is None:
            return dataclasses.replace(self, draws=None, conditioning="") == checkpoint
        return self == checkpoint

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with its id and label (a manifest's `recipe`)."""
        return {"recipe_id": self.recipe_id, "label": self.label, **dataclasses.asdict(self)}


def _config_json(stored: dict[str, Any] | None, defaults: Any, renames: dict[str, str] | None = None) -> str:
    """A stored stage or conditioning config as canonical JSON: today's names, every knob (missing
    ones at their defaults), the keys that do not change training left out."""
    default_values = dataclasses.asdict(defaults)
    values = default_values | {(renames or {}).get(key, key): value for key, value in (stored or {}).items()}
    return json.dumps({key: values[key] for key in sorted(default_values) if key not in UNTRAINED_KEYS})


def _stage1_json(stored: dict[str, Any] | None) -> tuple[int, str]:
    """Stage 1's warm start and canonical config: a stored config without a warm start is the
    paper's (the setting when such configs were written)."""
    stage1 = {OLDER_STAGE1_KEYS.get(key, key): value for key, value in (stored or {}).items()}
    stage1.setdefault("warm_start_arms", PAPER_WARM_START_ARMS)
    return int(stage1["warm_start_arms"]), _config_json(stage1, Stage1Config())


def _conditioning_parts(stored: dict[str, Any] | None) -> tuple[int | None, str]:
    """A cost-conditioned router's draws and canonical conditioning (None, "": a router of one weight pair)."""
    if stored is None:
        return None, ""
    config = _config_json(stored, CostConditioning())
    return int(json.loads(config)["draws"]), config


def run_recipe(settings: dict[str, Any], embedder: str, stage: int | None = None) -> Recipe:
    """The recipe a crossfit run's stored `settings` measure at `stage` (default: the run's; 1 for
    a Stage-2 run's `_stage1` parents). Runs do not record the embedder: `embedder` is the one
    their features were computed with (the store's current one)."""
    stage = settings["stage"] if stage is None else stage
    warm, stage1 = _stage1_json(settings.get("stage1"))
    # a run's conditioned routers are trained with its conditioning; older runs stored None for the default
    draws, conditioning = _conditioning_parts(settings.get("conditioning") or {})
    return Recipe(warm, stage, draws, int(settings["n_arms"]), embedder, int(settings["seed"]),
                  settings.get("retriever_hash", ""), stage1,
                  _config_json(settings.get("stage2"), Stage2Config()) if stage == 2 else "", conditioning)


def checkpoint_recipe(lineage: dict[str, Any], parent_lineage: dict[str, Any] | None = None) -> Recipe:
    """The recipe of a checkpoint from its lineage (a Stage-2 checkpoint's Stage 1 from its
    parent's, `parent_lineage`)."""
    stage = int(lineage["stage"])
    stage1_lineage = lineage if stage == 1 else (parent_lineage or {})
    warm, stage1 = _stage1_json(stage1_lineage.get("config"))
    draws, conditioning = _conditioning_parts(lineage.get("conditioning"))
    return Recipe(warm, stage, draws, int(lineage["n_arms"]), lineage["embedder"], int(lineage["seed"]),
                  lineage.get("retriever_hash", ""), stage1,
                  _config_json(lineage.get("config"), Stage2Config()) if stage == 2 else "", conditioning)


def default_recipe(n_arms: int, embedder: str, retriever_hash: str = "", stage: int = 1) -> Recipe:
    """The library's recipe where no measurement chooses one: the paper's Stage 1 (and its
    conditioning defaults), seed 0."""
    return run_recipe({"stage": stage, "n_arms": n_arms, "seed": 0, "retriever_hash": retriever_hash,
                       "stage1": dataclasses.asdict(Stage1Config()), "conditioning": {}}, embedder)


def recipe_checkpoints(checkpoints: pd.DataFrame, recipe: Recipe, variant: str,
                       weights: CostWeights | None) -> list[str]:
    """The checkpoints of `recipe` and `variant` among `checkpoints` (`Store.checkpoints` of one
    host, newest first): cost-conditioned ones when `weights` is None, else those trained at exactly
    these weights. Routers calibrated on another host's checkpoint are of no recipe, nor is a
    Stage-2 router whose parent is not among `checkpoints`."""
    lineages = {row.checkpoint_id: _loads(row.lineage) for row in checkpoints.itertuples()}
    found = []
    for row in checkpoints.itertuples():
        lineage = lineages[row.checkpoint_id]
        if (row.variant != variant or "calibrated_from" in lineage
                or ("conditioning" in lineage) != (weights is None)):
            continue
        if weights is not None and (lineage.get("lambda_in"), lineage.get("lambda_out")) != (
                weights.lambda_in, weights.lambda_out):
            continue
        parent = lineages.get(lineage.get("parent"))
        if (int(lineage["stage"]) == 1 or parent is not None) and recipe.serves(checkpoint_recipe(lineage, parent)):
            found.append(str(row.checkpoint_id))
    return found


def recipe_checkpoint(checkpoints: pd.DataFrame, recipe: Recipe, variant: str,
                      weights: CostWeights | None) -> str | None:
    """The newest of `recipe_checkpoints`, or None."""
    return next(iter(recipe_checkpoints(checkpoints, recipe, variant, weights)), None)


def _loads(value: str | dict) -> dict:
    return json.loads(value) if isinstance(value, str) else dict(value)
