"""The training-free gates measured on the queries whose draft was enumerated (`forge gate-probes`):
a crossfit run's out-of-fold decisions restricted to those queries, so TARG and the ladder are read
where they decided by their signal. Beside each gate, the fixed arms on the same queries, the gain
over the best of them with its paired 95% interval, and the papers' units: the share of queries
that carried retrieved evidence (TARG's, against always-retrieve's 100%) and that thought (DART's,
against always-cot's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from forge_core.errors import InvalidInput
from forge_core.policies.kinds import FIXED_ARM_KIND
from forge_core.statistics import macro, paired_bootstrap_ci
from forge_core.store import Store

GATES = ("targ", "dart", "logprob_ladder")  # the registry's training-free gates


def gate_report(store: Store, run_id: str, accounting: str = "deploy") -> dict:
    """Per gate and per fixed arm, on the run's queries that have a stored draft: macro utility, F1
    and tokens a query, retrieval and thinking shares, and each policy's utility gain over the best
    fixed arm there with its paired bootstrap 95% interval; with the number of such queries."""
    run = store.crossfit_runs()
    run = run[run["run_id"] == run_id]
    if run.empty:
        raise InvalidInput(f"no crossfit run '{run_id}' (see `forge eval crossfit --json`'s run_id)")
    host = str(run["host"].iloc[0])
    results = every = store.crossfit_results(run_id)
    drafted = store.finished_drafts(host)
    keys = list(zip(results["benchmark"], results["example_id"]))
    results = results[[key in drafted for key in keys]]
    fixed = sorted(set(results.loc[results["kind"] == FIXED_ARM_KIND, "policy"]))
    per_policy = {name: frame.sort_values(["benchmark", "example_id"])
                  for name, frame in results.groupby("policy") if name in (*GATES, *fixed)}
    if not per_policy or not fixed:
        return {"run_id": run_id, "host": host, "accounting": accounting, "queries_with_draft": 0,
                "queries_in_run": int(every.groupby("policy").size().max()), "best_fixed_policy": None,
                "policies": {}}
    benchmarks = per_policy[fixed[0]]["benchmark"].to_numpy()
    utility = {name: frame[f"{accounting}_utility"].to_numpy() for name, frame in per_policy.items()}
    best = max(fixed, key=lambda name: macro(utility[name], benchmarks))
    return {"run_id": run_id, "host": host, "accounting": accounting, "queries_with_draft": int(len(benchmarks)),
            "queries_in_run": int(every.groupby("policy").size().max()),
            "best_fixed_policy": best,
            "policies": {name: _row(frame, utility[name], utility[best], benchmarks, accounting)
                         for name, frame in per_policy.items()}}


def _row(frame: pd.DataFrame, utility: np.ndarray, best: np.ndarray, benchmarks: np.ndarray, accounting: str) -> dict:
    arms = frame["arm"].astype(str)
    return {"macro_utility": macro(utility, benchmarks), "macro_f1": macro(frame["f1"].to_numpy(), benchmarks),
            "tokens": macro(frame[f"{accounting}_tokens"].to_numpy(dtype=np.float64), benchmarks),
            "retrieval_share": float((~arms.str.startswith("direct:")).mean()),
            "thinking_share": float((~arms.str.endswith(":no_think")).mean()),
            "ci_utility_vs_best_fixed": list(paired_bootstrap_ci(utility, best, benchmarks))}
