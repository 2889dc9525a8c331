"""Test doubles shared by the tests and the benchmarks: `answering_server` (an OpenAI-compatible
server that answers at once), `fault_server` (one that misbehaves in every way a host can) and
`replay` (record a host's answers and replay them without the model). Import them as
`support.<module>`: pytest puts `tests/` on the import path (bench scripts add it themselves)."""
