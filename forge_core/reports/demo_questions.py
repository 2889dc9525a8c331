"""Stored questions whose arm, under a cost-conditioned router, changes as the weights rise (the
Live query page's demo list), and their view kept on disk: deciding them loads the training stack,
which the page's first render should not wait for."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from forge_core.errors import InvalidInput
from forge_core.evaluation.file_cache import cached_file
from forge_core.identity import canonical_hash
from forge_core.policies.context import evaluation_context
from forge_core.policies.routers import RouterPolicy
from forge_core.reports.action_map import stored_questions
from forge_core.routing.utility import CostWeights
from forge_core.store import Store

WEIGHT_LADDER = ((0.02, 0.04), (0.1, 0.2), (0.5, 1.0), (1.5, 3.0))  # rising weights along the paper's ratio 2
DEMO_CACHE = "demo"  # under the cache directory: the demo questions' views
DEMO_VIEW_VERSION = 1  # bumped when the demo questions' choice changes


@dataclass(frozen=True)
class DemoQuestion:
    """A stored question whose arm, under a cost-conditioned router, changes as the weights rise."""

    benchmark: str
    example_id: str
    question: str
    arms: tuple[str, ...]  # the router's arm at each weight pair of `WEIGHT_LADDER`


def demo_questions(store: Store, host: str, checkpoint_id: str, split: str = "test", limit: int = 6,
                   ladder: Sequence[tuple[float, float]] = WEIGHT_LADDER) -> list[DemoQuestion]:
    """Up to `limit` complete `split` questions of the host whose arm under the conditioned
    checkpoint changes along `ladder` (decided on their stored features, no host call): those that
    leave Raw as the weights rise first, the most arms seen first, one benchmark after another."""
    policy = RouterPolicy(checkpoint_id, checkpoint_id)
    context = evaluation_context(store, host, _n_arms(store, checkpoint_id), CostWeights(*ladder[0]))
    policy.fit(context)
    if policy.checkpoint.conditioning is None:
        raise InvalidInput(f"checkpoint {checkpoint_id} is not cost-conditioned: its arm never moves with the weights")
    rows = context.rows(split)
    arms = np.array([[context.table.arms[a] for a in policy.decide(context.at(CostWeights(li, lo)),
                                                                      rows).actions] for li, lo in ladder]).T
    moving = [i for i in range(len(rows)) if len(set(arms[i])) > 1]
    moving.sort(key=lambda i: (not arms[i][0].startswith("raw"), -len(set(arms[i]))))
    picked = _round_robin(moving, [context.table.keys[rows[i]][0] for i in moving], limit)
    keys = [context.table.keys[rows[i]] for i in picked]
    return [DemoQuestion(b, e, question, tuple(str(arm) for arm in arms[i]))
            for i, (b, e), question in zip(picked, keys, stored_questions(store, keys))]


def demo_questions_view(store: Store, host: str, checkpoint_id: str, cache_dir: Path) -> list[DemoQuestion]:
    """`demo_questions` of the host under a cost-conditioned checkpoint (test split, the default
    limit and ladder), computed once and kept under `cache_dir` (`demo/`) in a file named by the
    host, the checkpoint and the store's row counts and `Store.outcomes_written`."""
    key = canonical_hash("demo-questions", DEMO_VIEW_VERSION, {"host": host, "checkpoint": checkpoint_id,
                                                               "rows": store.table_counts() | store.outcomes_written()})
    path = Path(cache_dir) / DEMO_CACHE / f"{key[:20]}.json"
    return cached_file(path, lambda: demo_questions(store, host, checkpoint_id),
                       lambda file: [DemoQuestion(**{**row, "arms": tuple(row["arms"])})
                                     for row in json.loads(file.read_text())],
                       lambda file, questions: file.write_text(json.dumps([dataclasses.asdict(q) for q in questions])))


def _round_robin(items: list[int], groups: list[str], limit: int) -> list[int]:
    """Up to `limit` items in their order, taking one of each group in turn."""
    queues: dict[str, list[int]] = {}
    for item, group in zip(items, groups):
        queues.setdefault(group, []).append(item)
    picked: list[int] = []
    while len(picked) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


def _n_arms(store: Store, checkpoint_id: str) -> int:
    found = store.checkpoint(checkpoint_id)
    if found is None:
        raise InvalidInput(f"no checkpoint '{checkpoint_id}' (see `forge checkpoints`)")
    return int(found[0]["n_arms"])
