"""`forge` with a progress tap, for the kill tests: `python tests/faults/kill_tap.py <forge arguments>`
runs the real command and prints `kill-tap: insert <table>` to stderr as each insert into a store
table begins (inside its transaction). Commands such as `forge store load-demo` print nothing
until they end; this line is what lets a test kill them during their work rather than at a
guessed moment. Nothing else changes: the insert itself is the store module's own."""

from __future__ import annotations

import runpy
import sys
from typing import Any

from forge_core.store import exports

TAP_PREFIX = "kill-tap: insert "


def tapped(insert: Any) -> Any:
    """`insert` preceded by one flushed stderr line naming the table."""

    def insert_with_tap(connection: Any, table: str, *args: Any, **kwargs: Any) -> None:
        sys.stderr.write(f"{TAP_PREFIX}{table}\n")
        sys.stderr.flush()
        insert(connection, table, *args, **kwargs)

    return insert_with_tap


if __name__ == "__main__":
    exports._insert_new_rows = tapped(exports._insert_new_rows)  # how `load-demo` inserts each table
    sys.argv = ["forge", *sys.argv[1:]]
    runpy.run_module("forge_core.cli", run_name="__main__", alter_sys=True)
