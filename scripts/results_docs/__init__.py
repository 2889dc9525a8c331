"""The generators of the docs' result regions, one module per document (scripts/results_tables.py
writes and checks the documents)."""
