"""Docs generated, not typed: the result tables and figures of docs/results.md and
docs/results-rewards-grounding.md (and docs/bench.md's page renders, docs/serving.md's budget
replays), from the store's runs and
two kinds of committed outputs: bench/results/NAME.json (the JSON line bench/NAME.py printed last,
with the machine's load average) and data/demo/reports/NAME.json (the `--json` output of a command
whose routers no exported store holds: trained in memory, or trained by the command;
`scripts/stored_reports.sh` writes them).

    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/results_tables.py          # rewrite
    FORGE_STORE=/tmp/demo/forge.duckdb .venv/bin/python scripts/results_tables.py --check  # compare

The store is the demo store (`forge data import && forge store load-demo`). Every generated part
of the two documents sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` (HTML
comments, invisible once rendered): a block (the markers on lines of their own) or a fragment of
a sentence (the markers inline). The script rewrites what lies between the markers and nothing
else; `--check` writes nothing and exits 1 with a unified diff when a document differs from what
it would write (tests/test_results_docs.py compares the same texts).

It only reads, through the functions the documented commands call (`forge store summary`, `forge
eval cached|crossfit|fresh|transfer`, `forge rewards audit --no-crossfit`): no host is called and
nothing is trained. A sentence whose wording the store no longer bears out stops the script with
the claim that failed (rewrite the sentence), and so does a stored report whose figures the store
also gives and gives otherwise. Runs are selected by their settings (host, stage, accounting,
split seed, cost weights, conditioning), never by id; the ids the text quotes come from the store.
Crossfit reports are kept in FORGE_CACHE_DIR/crossfit, as the dashboard keeps them. Intervals are
paired bootstrap 95% intervals (seeded, so the text is the same on every run): queries resampled
within benchmarks, macro over benchmarks.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from results_docs import bench_md, results_md, rewards_grounding_md, serving_md
from results_docs.common import ROOT, Results

from forge_core import config
from forge_core.store import Store

DOCUMENTS = (ROOT / "docs" / "results.md", ROOT / "docs" / "results-rewards-grounding.md", ROOT / "docs" / "bench.md",
             ROOT / "docs" / "serving.md")
REGION = re.compile(r"<!-- generated:(?P<name>[\w-]+) -->(?P<body>.*?)<!-- /generated:(?P=name) -->", re.S)


# ---------------------------------------------------------------- the documents

REGIONS: dict[str, Callable[[Results], str]] = {  # each region of the documents, by its marker name
    # docs/results.md
    "demo-store": results_md.demo_store, "arms-all": results_md.arms_all, "arms-test": results_md.arms_test,
    "oracle-headroom": results_md.oracle_headroom, "cached-table": results_md.cached_table,
    "cached-reading": results_md.cached_reading, "crossfit-runs": results_md.crossfit_runs,
    "crossfit-tables": results_md.crossfit_tables, "peer-units": results_md.peer_units_table,
    "gates-table": results_md.gates_table, "guards-table": results_md.guards_table,
    "seed-runs": results_md.seed_runs,
    "seeds-table": results_md.seeds_table, "answer-view": results_md.answer_view,
    "full-router-reading": results_md.full_router_reading, "paper-weights-reading": results_md.paper_weights_reading,
    "costly-weights-reading": results_md.costly_weights_reading, "floor-reading": results_md.floor_reading,
    "oracle-set-table": results_md.oracle_set_table, "oracle-set-reading": results_md.oracle_set_reading,
    "stage2-table": results_md.stage2_table, "stage2-reading": results_md.stage2_reading,
    "default-stage1-runs": results_md.default_stage1_runs, "six-arm-runs": results_md.six_arm_runs,
    "six-arm-table": results_md.six_arm_table, "six-arm-reading": results_md.six_arm_reading,
    "fresh-run": results_md.fresh_run, "fresh-timing": results_md.fresh_timing, "fresh-table": results_md.fresh_table,
    "fresh-counts": results_md.fresh_counts, "fresh-differences": results_md.fresh_differences,
    "transfer-table": results_md.transfer_table, "transfer-arm-mix": results_md.transfer_arm_mix,
    "transfer-lite": results_md.transfer_lite, "small-target-router": results_md.small_target_router,
    "transfer-stored-runs": results_md.transfer_stored_runs,
    "transfer-stored-table": results_md.transfer_stored_table,
    "transfer-stored-lite": results_md.transfer_stored_lite,
    "transfer-full-reading": results_md.transfer_full_reading, "calibrate-budget": results_md.calibrate_budget,
    "conditioned-settings": results_md.conditioned_settings, "conditioned-table": results_md.conditioned_table,
    "conditioned-reading": results_md.conditioned_reading, "stage1-recipe-reading": results_md.stage1_recipe_reading,
    "embedder-agreement": results_md.embedder_agreement, "router-bench": results_md.router_bench,
    "serve-bench": results_md.serve_bench, "evidence-compare": results_md.evidence_compare_table,
    "evidence-arms": results_md.evidence_arms_table,
    # docs/results-rewards-grounding.md
    "consensus-regret": rewards_grounding_md.consensus_regret,
    "grounding-evaluator": rewards_grounding_md.grounding_evaluator,
    "grounding-f1": rewards_grounding_md.grounding_f1, "grounding-recall": rewards_grounding_md.grounding_recall,
    "grounding-support": rewards_grounding_md.grounding_support,
    "grounding-unsupported": rewards_grounding_md.grounding_unsupported,
    "grounding-reading": rewards_grounding_md.grounding_reading,
    "consensus-arms": rewards_grounding_md.consensus_arms, "consensus-match": rewards_grounding_md.consensus_match,
    "judge-arms": rewards_grounding_md.judge_arms, "judge-match": rewards_grounding_md.judge_match,
    # docs/bench.md
    "page-renders": bench_md.page_renders,
    # docs/serving.md
    "deploy-replay": serving_md.deploy_replay,
}


def regenerate(text: str, results: Results) -> str:
    """The text with every generated region rewritten: a block region keeps its markers' lines and
    indentation, a fragment stays inline."""
    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in REGIONS:
            raise SystemExit(f"unknown generated region '{name}' (known: {', '.join(REGIONS)})")
        body = REGIONS[name](results)
        if not match["body"].startswith("\n"):
            return f"<!-- generated:{name} -->{body}<!-- /generated:{name} -->"
        indent = match.string[:match.start()].rsplit("\n", 1)[-1]
        lines = "\n".join(indent + line if line else "" for line in body.split("\n"))
        return f"<!-- generated:{name} -->\n{lines}\n{indent}<!-- /generated:{name} -->"
    return REGION.sub(replace, text)


def check_regions(texts: Sequence[str]) -> None:
    """Refuse a region the documents lost (its text would go unchecked)."""
    missing = set(REGIONS) - {match["name"] for text in texts for match in REGION.finditer(text)}
    if missing:
        raise SystemExit(f"no region in {', '.join(p.name for p in DOCUMENTS)} for: {', '.join(sorted(missing))}")


def documents_from_store() -> dict[Path, tuple[str, str]]:
    """Each document's committed text and its text with every region generated from the store
    (FORGE_STORE) and the committed outputs."""
    if not config.store_path().exists():
        raise SystemExit(f"no store at {config.store_path()}: `forge data import && forge store load-demo` first")
    texts = {path: path.read_text() for path in DOCUMENTS}
    check_regions(list(texts.values()))
    results = Results(Store(config.store_path()), config.cache_dir() / "crossfit")
    results.start_reports(results.select(2, split_seed=None) + results.select(2, accounting="answer"))
    try:
        return {path: (old, regenerate(old, results)) for path, old in texts.items()}
    finally:
        results.close()


def difference(path: Path, committed: str, generated: str) -> str:
    """A unified diff of a document's committed text against the generated one ("" when equal)."""
    return "".join(difflib.unified_diff(
        committed.splitlines(keepends=True), generated.splitlines(keepends=True),
        f"{path.relative_to(ROOT)} (committed)", f"{path.relative_to(ROOT)} (from the store)"))


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the generated regions (or, with --check, report how they differ): 0, or 1 on a difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff when a document differs")
    check = parser.parse_args(argv).check
    differing = {path: texts for path, texts in documents_from_store().items() if texts[0] != texts[1]}
    for path, (committed, generated) in differing.items():
        if check:
            sys.stdout.write(difference(path, committed, generated))
        else:
            path.write_text(generated)
    return 1 if check and differing else 0


if __name__ == "__main__":
    sys.exit(main())
