"""FORGE: per-query routing of a frozen LLM between evidence forms and reasoning budgets."""

__version__ = "0.1.0"
