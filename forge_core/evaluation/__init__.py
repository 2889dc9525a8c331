"""Evaluating policies: statistics (`statistics`), what policies see (`context`), the policies and
baselines (`policies`), a live query (`live_query`), the Cached protocol with sweeps and repeats
(`cached`), the Fresh Online protocol (`fresh_online`), and the dashboard's reports (`reports`,
`action_map`)."""
