"""What the tests share besides fixtures (those stay in `tests/conftest.py`). Test doubles, also
used by the benchmarks: `answering_server` (an OpenAI-compatible server that answers at once),
`fault_server` (one that misbehaves in every way a host can) and `replay` (record a host's answers
and replay them without the model). Helpers: `resources` (skip, or fail under FORGE_REQUIRE_ALL=1,
when a resource is missing), `stores` (synthetic outcomes, a private copy of a store) and
`app_store` (the dashboard tests' small store). Import them as `support.<module>`: pyproject's
pytest `pythonpath` puts `tests/` on the import path (bench scripts add it themselves)."""
