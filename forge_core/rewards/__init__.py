"""Reward sources beside gold F1: `consensus` (agreement among a query's stored answers, no call)
and `judge` (a judge host's rating, stored per outcome: what a run rates in `judge_request`, the
resumable run in `judge_job`, the two kinds of rating in `rating_kinds`), their alignment with an
outcome table (`sources`), and the support verdicts (`support_verdict`, `live_support`)."""
