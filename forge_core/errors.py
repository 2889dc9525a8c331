"""Errors a user can act on. A `ForgeError` reaches the user as one line that names the fix (the
CLI prints it and exits with 2, the dashboard shows it, `forge serve` answers 400); any other
exception is a bug and keeps its traceback."""

from __future__ import annotations


class ForgeError(Exception):
    """A user mistake, or a step still to take, said in one line."""


class InvalidInput(ForgeError, ValueError):
    """An option, name, file or question FORGE cannot use as given."""


class MissingStep(ForgeError, ValueError):
    """Something has to be done first (import, enumerate, features, train, pull): the message says what."""
