"""Benchmarks in: file formats (`importers`), seeded splits (`splits`), and the import into the
store (`importing`)."""
