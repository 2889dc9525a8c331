"""The generated region of docs/serving.md: the budget replays."""

from __future__ import annotations

from results_docs.common import Results, listing, require, stored_report

# ---------------------------------------------------------------- serving to a budget

def _replay(name: str) -> dict:
    """A stored `scripts/deploy_replay.py all --out` result, checked against its own counts."""
    replay = stored_report(f"deploy_replay_{name}")
    require(replay["requests"] == replay["answered"] + replay["refused"] == replay["log_records"],
            f"the {name} replay counts every request once, answered or refused, and logs each")
    return replay


def _replay_arms(replay: dict) -> str:
    arms = replay["arms_last_half"]
    return ", ".join(f"{arm} {arms.get(arm, 0)}" for arm in ("direct:no_think", "summary:no_think", "raw:no_think"))


def deploy_replay(results: Results) -> str:
    """The two stored budget replays of the demo's default conditioned router: evidence from the
    union of the replay's corpora (the target held), and from one benchmark's corpus (out of reach)."""
    union, single = _replay("union"), _replay("musique")
    require(union["router"] == single["router"], "both replays serve the same router")
    require(abs(union["relative_error_last_half"]) <= 0.05 and union["refused"] == 0,
            "with the union's evidence the replay holds the target within 5% and refuses nothing")
    require(single["relative_error_last_half"] < -0.05, "with one corpus the replay stays below the target")
    return " ".join([
        f"On the demo store's default conditioned Lite router (`{union['router']}`), a {union['requests']:,}-request "
        f"replay (`scripts/deploy_replay.py all`, the counting double as host) at the target halfway between "
        f"Always-Direct's and Always-Raw's cost ({union['direct_tokens']:.1f} and {union['raw_tokens']:.1f} tokens: "
        f"{union['target']:.1f}), with evidence from the union of the {listing(union['corpus'])} corpora, realized "
        f"{union['realized_mean_last_half']:.1f} tokens a request over the last {union['requests'] // 2} "
        f"({union['relative_error_last_half']:+.1%}); {union['refused']} refused, "
        f"{union['log_records_per_request']:g} log record a request; arms after the shift: {_replay_arms(union)}.",
        f"Served from the {listing(single['corpus'])} corpus alone, the same replay (target "
        f"{single['target']:.1f}) realized {single['realized_mean_last_half']:.1f} "
        f"({single['relative_error_last_half']:+.1%}; arms after the shift: {_replay_arms(single)}): the questions "
        "of the other benchmarks find no passage of theirs in it, and with retrieval features that say so the "
        f"router answers {single['arms_last_half'].get('direct:no_think', 0)} of the last "
        f"{single['requests'] // 2} requests Direct: that budget is out of its reach."])
