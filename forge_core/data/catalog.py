"""Which benchmarks a user can name: the five built-ins and every file imported as their own."""

from __future__ import annotations

from collections.abc import Sequence

from forge_core.data.importers import QA_ONLY_FILES
from forge_core.errors import InvalidInput
from forge_core.records import BENCHMARKS
from forge_core.store import Store


def known_benchmarks(store: Store) -> tuple[str, ...]:
    """The built-in benchmarks, then the user's own imports (the question-only lists, which have
    no corpus to retrieve from, are not routable)."""
    own = [name for name in store.imported_benchmarks() if name not in BENCHMARKS and name not in QA_ONLY_FILES]
    return (*BENCHMARKS, *own)


def imported_routable_benchmarks(store: Store) -> tuple[str, ...]:
    """The known benchmarks this store has imported: what a command covers by default."""
    imported = set(store.imported_benchmarks())
    return tuple(name for name in known_benchmarks(store) if name in imported)


def check_benchmarks(store: Store, names: Sequence[str]) -> tuple[str, ...]:
    """`names` if every one is known, else a one-line `ValueError` listing the known ones."""
    known = known_benchmarks(store)
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise InvalidInput(f"unknown benchmark(s): {', '.join(unknown)} (known: {', '.join(known)}; "
                         "import your own with `forge data import-file`)")
    return tuple(names)
