"""The generated regions of docs/results-rewards-grounding.md: grounding and the reward audits."""

from __future__ import annotations

import json
from collections.abc import Callable

from forge_core.reports.tables import ORACLE
from forge_core.statistics import Interval
from results_docs.common import (
    AUDIT_WEIGHTS,
    GROUNDED,
    GROUNDED_ROUTERS,
    Results,
    ci_text,
    gain_text,
    listing,
    require,
    stored_report,
)

# ---------------------------------------------------------------- grounding (docs/results-rewards-grounding.md)

def grounding_evaluator(results: Results) -> str:
    """The support evaluator the Cached report names, and its coverage."""
    report = results.cached["deploy"]
    coverage = {row["support_coverage"] for name, row in report["policies"].items()}
    require(len(coverage) == 1, "every policy has the same support coverage")
    return (f"reported `support_evaluator` \"{report['support_evaluator']}\", coverage {next(iter(coverage)):.1f} "
            "for every policy")


def _grounding_table(results: Results, metric: str, value: Callable[[dict], dict[str, float]],
                     total: Callable[[dict], str]) -> str:
    policies = results.cached["deploy"]["policies"]
    benchmarks = list(value(policies["always_raw"]))
    lines = [f"| {metric} | " + " | ".join(benchmarks) + " | macro |", "|---|" + "---|" * (len(benchmarks) + 1)]
    for name in GROUNDED:
        row = policies[name]
        label = f"{name} (descriptive)" if name == ORACLE else name
        lines.append(f"| {label} | " + " | ".join(f"{value(row)[b]:.3f}" for b in benchmarks) + f" | {total(row)} |")
    return "\n".join(lines)


def grounding_f1(results: Results) -> str:
    """Per grounded policy and benchmark: F1 on the test split."""
    return _grounding_table(results, "F1", lambda row: {b: v["f1"] for b, v in row["per_benchmark"].items()},
                            lambda row: f"{row['macro_f1']:.3f}")


def grounding_recall(results: Results) -> str:
    """Per grounded policy and benchmark: gold evidence recall of the chosen arm."""
    return _grounding_table(results, "gold_recall", lambda row: row["gold_recall_per_benchmark"],
                            lambda row: f"{row['gold_recall']:.3f}")


def _rate_table(results: Results, rate: str) -> str:
    return _grounding_table(results, rate, lambda row: {b: v[rate] for b, v in row["support_per_benchmark"].items()},
                            lambda row: f"{row[rate]:.3f} [{row[f'ci_{rate}'][0]:.3f}, {row[f'ci_{rate}'][1]:.3f}]")


def grounding_support(results: Results) -> str:
    """Per grounded policy and benchmark: the share of answers judged SUPPORTED."""
    return _rate_table(results, "support_rate")


def grounding_unsupported(results: Results) -> str:
    """Per grounded policy and benchmark: the share of answers judged CONTRADICTED."""
    return _rate_table(results, "unsupported_rate")


def grounding_reading(results: Results) -> str:
    """Router minus Always-Raw in gold recall and in support rate, with paired intervals."""
    policies = results.cached["deploy"]["policies"]
    names = GROUNDED_ROUTERS

    def differences(metric: str) -> str:
        return ", ".join(f"{label} {gain_text(*results.grounding[name][metric])}" for name, label in names.items())

    recall = {name: results.grounding[name]["gold_recall"][1] for name in names}
    support = [policies[name]["support_rate"] for name in GROUNDED if name not in ("always_direct", ORACLE)]
    verdict = ("below it decidably" if all(Interval.of(ci).below for ci in recall.values()) else
               "not decidably different from it" if not any(Interval.of(ci).decided for ci in recall.values()) else
               "decidably below it only for "
               + listing([names[n] for n, ci in recall.items() if Interval.of(ci).below]))
    require(not any(Interval.of(results.grounding[n]["support_rate"][1]).decided for n in names),
            "no router's support rate is decidably different from Always-Raw's")
    return (f"Gold evidence recall, router minus Always-Raw (paired 95% intervals over the annotated queries): "
            f"{differences('gold_recall')}; the routers' recall is {verdict} (Lite sends more 2WikiMultihopQA and "
            f"MuSiQue queries to Summary or Direct). Support does not separate them: policies with evidence sit "
            f"between {min(support):.3f} and {max(support):.3f} supported, and router minus Always-Raw is "
            f"{differences('support_rate')}")


# ---------------------------------------------------------------- reward audits (docs/results-rewards-grounding.md)

def _rho(rho: float | None) -> str:
    """A Spearman coefficient, "–" where it is undefined (a constant arm)."""
    return "–" if rho is None else f"{rho:.3f}"


def _match(match: dict) -> str:
    """A share with its interval: "0.654 [0.627, 0.678]"."""
    return f"{match['share']:.3f} [{match['ci'][0]:.3f}, {match['ci'][1]:.3f}]"


def consensus_arms(results: Results) -> str:
    """Per arm: Spearman of the consensus reward with gold F1, and both means."""
    lines = ["| arm | Spearman with gold F1 | mean consensus | mean gold F1 |", "|---|---|---|---|"]
    for arm, row in results.audit("consensus", AUDIT_WEIGHTS[0])["arms"].items():
        lines.append(f"| {arm} | {_rho(row['spearman'])} | {row['mean_proxy']:.3f} | {row['mean_gold_f1']:.3f} |")
    return "\n".join(lines)


def consensus_match(results: Results) -> str:
    """How often the consensus-best arm is a gold-best arm, by F1 and by utility."""
    audit = results.audit("consensus", AUDIT_WEIGHTS[0])
    return (f"on {_match(audit['best_arm_match']).replace(' [', ' of the queries [', 1)}, and by utility on "
            f"{_match(audit['best_utility_arm_match'])}")


def judge_arms(results: Results) -> str:
    """Per arm: Spearman of the judge reward with gold F1, both means, and the arm's gold utility at
    each audited weight pair."""
    audits = results.audits("judge")
    lines = ["| arm | Spearman with gold F1 | mean judge reward | mean gold F1 | gold utility at "
             + " | at ".join(f"{li:g}/{lo:g}" for li, lo in AUDIT_WEIGHTS) + " |", "|---|---|---|---|---|---|"]
    for arm, row in audits[0]["arms"].items():
        utilities = " | ".join(f"{audit['arms'][arm]['macro_gold_utility']:.3f}" for audit in audits)
        lines.append(f"| {arm} | {_rho(row['spearman'])} | {row['mean_proxy']:.3f} | {row['mean_gold_f1']:.3f} "
                     f"| {utilities} |")
    return "\n".join(lines)


def judge_match(results: Results) -> str:
    """How often the judge-best arm is a gold-best arm, by F1 and by utility at each weight pair."""
    audits = results.audits("judge")
    by_utility = " and ".join(f"{_match(audit['best_utility_arm_match'])} at {audit['lambda_in']:g}/"
                              f"{audit['lambda_out']:g}" for audit in audits)
    return (f"by F1 on {_match(audits[0]['best_arm_match']).replace(' [', ' of the queries [', 1)}, by utility on "
            f"{by_utility}")


def _stored_audit(reward: str, weights: tuple[float, float], results: Results) -> dict:
    """A stored `forge rewards audit --reward R [--lambda-in --lambda-out] --json` report; its per-arm
    part must be what the store gives today (`Results.audit`)."""
    stored = stored_report(f"audit_{reward}_{weights[0]:g}_{weights[1]:g}")
    fresh = results.audit(reward, weights)
    require(json.dumps(stored["arms"], sort_keys=True) == json.dumps(fresh["arms"], sort_keys=True)
            and stored["best_utility_arm_match"] == fresh["best_utility_arm_match"],
            f"the stored {reward} audit at {weights[0]:g}/{weights[1]:g} has the store's per-arm figures")
    return stored


def _regret_sentence(audit: dict, name: str) -> str:
    """A router trained on the proxy against the same trained on gold: utility, F1, `regret_vs_gold`."""
    row = audit["routers"][name]
    return (f"utility {row['proxy_trained']['macro_utility']:.3f} (gold F1 {row['proxy_trained']['macro_f1']:.3f}) "
            f"trained on {audit['reward']} against {row['gold_trained']['macro_utility']:.3f} "
            f"({row['gold_trained']['macro_f1']:.3f}) on gold, `regret_vs_gold` {row['regret_vs_gold']:+.3f} "
            f"{ci_text(row['ci_regret_vs_gold'])}")


def consensus_regret(results: Results) -> str:
    """The stored consensus audits' Lite router trained on consensus against the same trained on gold."""
    audits = [_stored_audit("consensus", weights, results) for weights in AUDIT_WEIGHTS]
    return "; ".join(f"at {a['lambda_in']:g}/{a['lambda_out']:g} ({a['folds']} folds, {a['queries']:,} queries) "
                     f"the Lite router reaches {_regret_sentence(a, 'forge_lite')}: \"{a['verdict'].split(':')[0]}\""
                     for a in audits)
