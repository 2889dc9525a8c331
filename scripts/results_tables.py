"""The README's result tables, as Markdown, from the JSON that `forge eval ... --json` printed.

    python scripts/results_tables.py cached DEPLOY.json ANSWER.json
    python scripts/results_tables.py crossfit RUN.json [RUN.json ...]     # one run per cost weight
    python scripts/results_tables.py seeds RUN.json [RUN.json ...]        # the last run of each weight
    python scripts/results_tables.py fresh FRESH.json
    python scripts/results_tables.py transfer REPORT.json [REPORT.json ...]  # `forge eval transfer` reports

`scripts/crossfit_demo.sh` writes the crossfit files to data/crossfit/, `scripts/transfer_demo.sh`
the transfer reports to data/transfer/.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from forge_core.evaluation.reports import arm_mix_frame


def _order(policies: dict) -> list[str]:
    """Fixed arms, baselines, the floor, the FORGE routers, the oracle, by each policy's `kind`
    (reports written before kinds were recorded keep their own order)."""
    ranks = {"fixed arm": 1, "baseline": 2, "router": 4, "oracle": 5}

    def rank(name: str) -> int:
        return ranks.get(policies[name].get("kind"), 0) - (name == "ridge_utility")
    return sorted(policies, key=rank)


def _ci(interval: list[float] | None) -> str:
    return "" if interval is None else f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


def _weights(report: dict) -> str:
    return f"λ {report['lambda_in']:g} / {report['lambda_out']:g}"


def cached(deploy: dict, answer: dict) -> str:
    """Cached protocol: F1, both costs, calls, utility under both accountings, F1 vs Raw."""
    lines = ["| policy | macro F1 | k tok, deploy | k tok, answer | calls | utility, deploy | utility, answer "
             "| F1 vs Always-Raw, 95% CI |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, row in deploy["policies"].items():
        lines.append(f"| `{name}` | {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['answer_cost_k']:.3f} "
                     f"| {row['calls_per_query']:.2f} | {row['macro_utility']:.3f} "
                     f"| {answer['policies'][name]['macro_utility']:.3f} | {_ci(row['ci_vs_always_raw'])} |")
    return "\n".join(lines)


def _utility_cell(report: dict, name: str) -> str:
    row = report["policies"][name]
    best = report["policies"][report["best_fixed_policy"]]["macro_utility"]
    return (f"{row['macro_utility']:.3f}, {row['macro_utility'] - best:+.3f} {_ci(row['ci_utility_vs_best_fixed'])}, "
            f"{_ci(row.get('ci_utility_vs_floor')) or '–'}")


def _cost_cell(report: dict, name: str) -> str:
    row = report["policies"][name]
    return (f"{row['macro_f1']:.3f}, {row['deploy_cost_k']:.3f} / {row['answer_cost_k']:.3f}, "
            f"{row['calls_per_query']:.2f}")


def _per_weight_table(reports: list[dict], what: str, cell: Callable[[dict, str], str]) -> list[str]:
    header = " | ".join(f"{_weights(r)}: {what}" for r in reports)
    lines = [f"| policy | {header} |", "|---|" + "---|" * len(reports)]
    for name in _order(reports[0]["policies"]):
        lines.append(f"| `{name}` | " + " | ".join(cell(report, name) for report in reports) + " |")
    return lines


def crossfit(reports: list[dict]) -> str:
    """Per policy and weight: utility, gain over the best fixed arm and over the floor with intervals;
    then F1, both costs and the calls."""
    return "\n".join([*_per_weight_table(reports, "utility, vs best fixed, vs floor", _utility_cell), "",
                      *_per_weight_table(reports, "F1, k tok deploy / answer, calls", _cost_cell)])


def seeds(reports: list[dict], policies: tuple[str, ...] = ("forge_full", "forge_lite", "bge_bm25_kl",
                                                             "ridge_utility", "forge_full_fallback")) -> str:
    """Per weight and router: the gain over the best fixed arm at each split seed, spread, decidable."""
    lines = ["| weights | policy | gain at each split seed [95% CI] | spread | decidable | decidable vs floor |",
             "|---|---|---|---:|---|---|"]
    for report in reports:
        spread = report["across_split_seeds"]
        for name in policies:
            row = spread["policies"][name]
            gains = "; ".join(f"{seed}: {gain:+.3f} {_ci(ci)}"
                              for seed, gain, ci in zip(spread["split_seeds"], row["gains"], row["intervals"]))
            floor = "–" if name == report["floor_policy"] else ("yes" if row["decidable_vs_floor"] else "no")
            lines.append(f"| {_weights(report)} | `{name}` | {gains} | {row['spread']:.3f} "
                         f"| {'yes' if row['decidable'] else 'no'} | {floor} |")
    return "\n".join(lines)


def fresh(report: dict) -> str:
    """Fresh Online: F1 (live and cached), both costs, calls, utility, latency."""
    lines = ["| policy | macro F1 | Cached F1, same queries | k tok, every call | k tok, answer | calls "
             "| utility | latency p50 (s) | p95 (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in report["policies"].items():
        lines.append(f"| `{name}` | {row['macro_f1']:.3f} | {row['cached_macro_f1']:.3f} | {row['deploy_cost_k']:.3f} "
                     f"| {row['answer_cost_k']:.3f} | {row['calls_per_query']:.2f} | {row['macro_utility']:.3f} "
                     f"| {row['latency_p50_ms'] / 1000:.2f} | {row['latency_p95_ms'] / 1000:.2f} |")
    return "\n".join(lines)


TRANSFER_POLICIES = ("always_raw", "oracle", "target_forge_lite", "transfer_forge_lite", "transfer_forge_full")


def transfer(reports: list[dict]) -> str:
    """Per transfer report: each reference and transferred router (then its calibrated versions by
    K) with F1, deployment cost, utility and the paired intervals against the target's Always-Raw,
    best fixed arm and own Lite router; then each benchmark's arm mix of the first report."""
    lines = ["| source -> target, weights | policy | macro F1 | k tok, deploy | utility | vs Always-Raw "
             "| vs best fixed | vs target's router |", "|---|---|---:|---:|---:|---|---|---|"]
    for report in reports:
        names = [report["best_fixed_policy"], *TRANSFER_POLICIES,
                 *(point["policy"] for points in report["calibration"].values() for point in points)]
        names = [name for name in dict.fromkeys(names) if name in report["policies"]]
        for name in names:
            row = report["policies"][name]
            lines.append(f"| {report['source_host']} -> {report['target_host']}, {_weights(report)} | `{name}` "
                         f"| {row['macro_f1']:.3f} | {row['deploy_cost_k']:.3f} | {row['macro_utility']:.3f} "
                         f"| {_ci(row['ci_utility_vs_always_raw'])} | {_ci(row['ci_utility_vs_best_fixed'])} "
                         f"| {_ci(row['ci_utility_vs_target_router'])} |")
    first = reports[0]
    columns = [name for name in ("oracle", "transfer_forge_lite", "target_forge_lite") if name in first["policies"]]
    lines += ["", f"Arm mix per benchmark, {first['source_host']} -> {first['target_host']}, {_weights(first)}:", "",
              "| benchmark | " + " | ".join(f"`{name}`" for name in columns) + " |", "|---|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in arm_mix_frame(first, columns).itertuples(index=False)]
    return "\n".join(lines)


def main(kind: str, paths: list[str]) -> None:
    reports = [json.loads(Path(path).read_text()) for path in paths]
    tables = {"cached": lambda: cached(*reports), "crossfit": lambda: crossfit(reports),
              "seeds": lambda: seeds(reports), "fresh": lambda: fresh(*reports),
              "transfer": lambda: transfer(reports)}
    if kind not in tables:
        raise SystemExit(f"kind is one of {', '.join(tables)}, not '{kind}'")
    print(tables[kind]())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
