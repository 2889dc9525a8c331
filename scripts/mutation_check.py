"""Targeted mutations: does each test that protects a piece of code fail when that code is broken?

Part of closing an issue: every new test is checked with one targeted bug in the code it protects.
`MUTATIONS` lists them (the code, the bug, the tests that must catch it). In a temporary copy of the
repository's tracked files (the working tree is never touched), the tests first pass unmutated;
then each mutation is applied there and its tests run with this interpreter, every resource
required (so none skips); the mutation is killed when they fail. Prints one line per mutation,
then one JSON line: {"mutations", "killed", "survived": [names]}; exits 1 when any survived.

Usage: .venv/bin/python scripts/mutation_check.py [NAME ...]   (default: every mutation)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 1800  # one mutation's tests


@dataclass(frozen=True)
class Mutation:
    """One targeted bug: `before` replaced by `after` (exactly once) in `path`, which `tests` must catch."""

    name: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]


DECIDE = "forge_core/evaluation/decide.py"
DECIDE_TESTS = ("tests/evaluation/test_decide.py",)
MUTATIONS = (
    Mutation("candidate admitted on its upper bound", DECIDE,
             'Interval.of(policies[name]["gain_vs_best_fixed"]["utility"]["ci"]).above]',
             'Interval.of(policies[name]["gain_vs_best_fixed"]["utility"]["ci"]).high > 0]', DECIDE_TESTS),
    Mutation("a decidably worse cheaper arm counted as tied", DECIDE,
             "if name == leader or not Interval.of(interval).decided]",
             "if name == leader or not Interval.of(interval).above]", DECIDE_TESTS),
    Mutation("an interval touching zero read as decided", "forge_core/statistics.py",
             "return self.low > 0", "return self.low >= 0", ("tests/test_statistics.py",)),
    Mutation("a budget read on the upper bound of the tokens", DECIDE,
             "budget_tokens is None or token_cis[i][0] <= budget_tokens",
             "budget_tokens is None or token_cis[i][1] <= budget_tokens", DECIDE_TESTS),
    Mutation("the floor made deployable", DECIDE, "if kind == FIXED_ARM_KIND or name in ROUTER_VARIANTS:",
             "if kind == FIXED_ARM_KIND or name in ROUTER_VARIANTS or name == FLOOR_POLICY:", DECIDE_TESTS),
    Mutation("the newest anchor run instead of the nearest", DECIDE,
             "return min(anchors, key=distance, default=None)", "return next(iter(anchors), None)",
             DECIDE_TESTS),
    Mutation("a Stage-2 run's parents before the recipe's own run", DECIDE,
             'key=lambda m: (m.settings["split_seed"], m.suffix != "")', 'key=lambda m: m.settings["split_seed"]',
             DECIDE_TESTS),
    Mutation("an old run's missing warm start read as the whole alphabet", "forge_core/evaluation/recipe.py",
             'stage1.setdefault("warm_start_arms", PAPER_WARM_START_ARMS)', 'stage1.setdefault("warm_start_arms", 6)',
             ("tests/evaluation/test_recipe.py",)),
    Mutation("a conditioned checkpoint's draws ignored", "forge_core/evaluation/recipe.py",
             "        return self == checkpoint",
             '        return dataclasses.replace(self, draws=None, conditioning="") == '
             'dataclasses.replace(checkpoint, draws=None, conditioning="")', ("tests/evaluation/test_recipe.py",)),
    Mutation("a recipe beats another by chance", "forge_core/evaluation/recipe_choice.py",
             "return above > below and p_value <= SIGN_TEST_LEVEL", "return above > below",
             ("tests/evaluation/test_recipe.py",)),
    Mutation("a manifest's checkpoint not checked", "forge_core/evaluation/manifest.py",
             "    if checkpoint is not None:\n        problems += _checkpoint_problems(store, host, manifest)",
             "    if checkpoint is None:\n        problems += _checkpoint_problems(store, host, manifest)",
             ("tests/cli/test_cli_decide.py::test_serve_manifest_serves_exactly_it_and_refuses_what_no_longer_holds",)),
    Mutation("requests not named by their manifest", "forge_core/server/app.py",
             'record["manifest"] = manifest_id(self.settings.manifest)', "pass",
             ("tests/cli/test_cli_decide.py::test_serve_manifest_serves_exactly_it_and_refuses_what_no_longer_holds",)),
    Mutation("the Pareto decision table's utility row showing F1", "app/decision_view.py",
             'labels = {"utility": "utility", "f1": "macro F1", "tokens": "tokens a query"}',
             'labels = {"f1": "utility", "utility": "macro F1", "tokens": "tokens a query"}',
             ("tests/app/test_pareto_decision.py::test_the_decision_is_stated_where_no_run_is_stored",)),
    Mutation("probe output tokens kept on a fallback", "forge_core/policies/context.py",
             "np.where(keep, self.prior_tokens_out, 0.0)", "self.prior_tokens_out",
             ("tests/policies/test_accounting.py",)),
    Mutation("--since hours read as minutes", "forge_core/reports/traffic.py", '"h": 3600', '"h": 60',
             ("tests/server/test_budget_and_traffic_log.py",)),
    Mutation("the shadow quality difference with its sign flipped", "forge_core/reports/traffic.py",
             's["candidate_rating"] - s["served_rating"]', 's["served_rating"] - s["candidate_rating"]',
             ("tests/server/test_budget_and_traffic_log.py",)),
    Mutation("a hybrid retriever's hash ignoring its embedder", "forge_core/evidence/retrievers.py",
             'if config.kind in ("dense", "hybrid"):', 'if config.kind in ("dense",):',
             ("tests/evidence/test_retrievers.py",)),
    Mutation("HTTP 429 not retried", "forge_core/hosts/http_retry.py", "return status == 429 or status >= 500",
             "return status >= 500", ("tests/hosts/test_hosts_http.py",)),
)


def tracked_copy(directory: Path) -> Path:
    """The repository's tracked files (as they are in the working tree) copied under `directory`."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    copy = directory / "repo"
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            target = copy / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return copy


def test_environment() -> dict[str, str]:
    """The tests' environment in the copy: the benchmarks where this checkout reads them, and every
    resource required (a test that would skip for want of one fails, so it cannot pass as a survivor)."""
    from forge_core import config

    return {**os.environ, "FORGE_BENCHMARKS_DIR": str(config.benchmarks_dir()), "FORGE_REQUIRE_ALL": "1"}


def tests_pass(copy: Path, tests: tuple[str, ...]) -> bool:
    """Whether `tests` pass in the copy."""
    result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests], cwd=copy,
                            capture_output=True, text=True, timeout=TIMEOUT_S, env=test_environment())
    return result.returncode == 0


def killed(copy: Path, mutation: Mutation) -> bool:
    """Apply the mutation in the copy, run its tests there, restore the file; True when they failed."""
    path = copy / mutation.path
    original = path.read_text()
    if original.count(mutation.before) != 1:
        raise SystemExit(f"{mutation.name}: the code to mutate is not in {mutation.path} exactly once")
    path.write_text(original.replace(mutation.before, mutation.after))
    try:
        return not tests_pass(copy, mutation.tests)
    finally:
        path.write_text(original)


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    survived = []
    with tempfile.TemporaryDirectory(prefix="forge-mutations-") as directory:
        copy = tracked_copy(Path(directory))
        tests = tuple(dict.fromkeys(test for mutation in chosen for test in mutation.tests))
        if not tests_pass(copy, tests):  # a failure the mutations did not cause would count as a kill
            raise SystemExit("the tests fail without any mutation: fix them first")
        for mutation in chosen:
            caught = killed(copy, mutation)
            print(f"{'killed  ' if caught else 'SURVIVED'} {mutation.name}", flush=True)
            if not caught:
                survived.append(mutation.name)
    print(json.dumps({"mutations": len(chosen), "killed": len(chosen) - len(survived), "survived": survived}))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
