"""`forge gate-probes` (the training-free gates' draft with token logprobs, per stored query, resumable) and
`forge gate-report` (the gates on the queries that have one)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from forge_core.cli.output import console, counting_progress, open_store, print_json, print_summary


def gate_probes_command(
    host: Annotated[str, typer.Option(help="A host name (see `forge host list`).")] = "embedded",
    limit: Annotated[Optional[int], typer.Option(help="At most this many drafts in this run.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run the gates' probe (the greedy Direct draft with each token's top-2 logprobs) on every query
    of HOST that has the Full-feature probes and no draft yet; each draft is stored as it lands, so a
    rerun sends only what is missing. DART's second draft is the stored first sample: no call."""
    from forge_core.enumeration.gate_probes import run_gate_probes
    from forge_core.hosts.registry import get_host_config

    store = open_store()
    config = get_host_config(store, host)
    with counting_progress() as bar:
        task = bar.add_task("gate drafts", total=None)
        report = run_gate_probes(store, config, limit,
                                 progress=lambda done, total: bar.update(task, completed=done, total=total))
    rate = report.answered / report.seconds if report.seconds else 0.0
    print_summary({"host": host, "planned": report.planned, "answered": report.answered, "errors": report.errors,
                   "seconds": round(report.seconds, 1), "drafts_per_s": round(rate, 3),
                   "stored": len(store.finished_drafts(host))}, as_json)
    if report.errors and not as_json:
        console.print(f"{report.errors} calls failed: rerun to redo them")


def gate_report_command(
    run: Annotated[str, typer.Argument(help="A crossfit run id (`forge eval crossfit --json` prints it).")],
    accounting: Annotated[str, typer.Option(help="deploy (every call) or answer (the answering call).")] = "deploy",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The training-free gates and the fixed arms of a crossfit run on the queries whose draft is stored
    (`forge gate-probes`): utility, F1, tokens, retrieval and thinking shares, and the utility gain over
    the best fixed arm there with its paired 95% interval."""
    from forge_core.reports.gates import gate_report

    report = gate_report(open_store(), run, accounting)
    if as_json:
        print_json(report)
        return
    console.print(f"{report['queries_with_draft']} of {report.get('queries_in_run', 0)} queries of {run} have a "
                  f"stored draft; best fixed arm there: {report.get('best_fixed_policy')}")
    for name, row in report["policies"].items():
        low, high = row["ci_utility_vs_best_fixed"]
        console.print(f"{name:18} utility {row['macro_utility']:.3f} [{low:+.3f}, {high:+.3f}] "
                      f"F1 {row['macro_f1']:.3f} "
                      f"tokens {row['tokens']:.0f} retrieved {row['retrieval_share']:.0%} "
                      f"thought {row['thinking_share']:.0%}")
