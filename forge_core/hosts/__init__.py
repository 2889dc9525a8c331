"""Hosts: the frozen LLMs that answer, behind one small interface (see `base`)."""
