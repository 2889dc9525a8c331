"""What a judge run rates: `JudgeRequest` (which host's stored outcomes, judged by which host, as
the judge reward or the support verdict), with its `check` and its record (`to_dict`/`from_dict`).

It lives apart from the run (`judge_job`, which imports the retrieval stack) so that `forge rewards
judge` and `forge rewards support` read their option defaults from its fields at start-up.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from forge_core.arms import thinking_modes
from forge_core.data.catalog import check_benchmarks, imported_routable_benchmarks
from forge_core.enumeration.planning import check_bounds, check_split
from forge_core.errors import MissingStep
from forge_core.evidence.retrievers import DEFAULT_RETRIEVER, evaluated_retriever_hash
from forge_core.hosts.registry import get_host_config
from forge_core.rewards.rating_kinds import rating_kind
from forge_core.store import Store


@dataclass(frozen=True)
class JudgeRequest:
    """Which stored outcomes to judge, and by which host."""

    host: str = "embedded"  # the host whose answers are judged
    judge_host: str = "embedded"  # the host that judges them
    split: str = "all"  # train, dev, test or all
    benchmarks: tuple[str, ...] | None = None  # default: every imported benchmark
    n_arms: int = 6  # the alphabet whose arms are judged
    split_seed: int = 0
    limit: int | None = None  # at most this many queries in all
    concurrency: int = 1  # judge calls in flight at once
    kind: str = "judge"  # judge (is the answer correct?) or support (does the prompt's evidence support it?)
    retriever: str = DEFAULT_RETRIEVER  # whose evidence the rated Summary and Raw answers were made under

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the jobs table's `params`, a job's request file)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict[str, Any] | str) -> JudgeRequest:
        """The request `to_dict` wrote (or its JSON); fields this version does not know are left out."""
        values = json.loads(params) if isinstance(params, str) else dict(params)
        known = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in values.items() if key in known}
        if values.get("benchmarks") is not None:
            values["benchmarks"] = tuple(values["benchmarks"])
        return cls(**values)

    def check(self, store: Store) -> None:
        """Refuse, in one line, what the job would refuse: unknown hosts, kind, split, split seed,
        benchmarks or retriever, a host without stored outcomes (under the retriever), a limit or
        concurrency below 1."""
        rating_kind(self.kind)
        check_split(self.split, self.split_seed)
        thinking_modes(self.n_arms)
        if self.benchmarks is not None:
            check_benchmarks(store, self.benchmarks)
        check_bounds({"limit": self.limit, "concurrency": self.concurrency})
        get_host_config(store, self.judge_host)
        if self.host not in store.hosts_with_outcomes():
            raise MissingStep(f"host '{self.host}' has no stored outcomes to judge: run `forge enumerate --host "
                              f"{self.host}` or `forge store load-demo`")
        self.retriever_hash(store)

    def retriever_hash(self, store: Store) -> str:
        """The configuration hash of the retriever whose answers are rated ("": the default BM25);
        refuses an unknown retriever or one the host has no outcomes under."""
        return evaluated_retriever_hash(store, self.host, self.retriever)

    def chosen_benchmarks(self, store: Store) -> tuple[str, ...]:
        """The benchmarks whose outcomes are judged."""
        return self.benchmarks if self.benchmarks is not None else imported_routable_benchmarks(store)
