"""Reward sources beside gold F1: `consensus` (agreement among a query's stored answers, no call)
and `judge` (a judge host's rating, stored per outcome), their alignment with an outcome table,
and the audit of a proxy against gold."""
