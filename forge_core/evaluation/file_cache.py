"""A result computed once and kept in a file: read back while the file exists, else computed and
written atomically (a partial file beside it, then renamed), so a reader never sees half a file and
concurrent writers of the same result do not clash."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def cached_file(path: Path, compute: Callable[[], T], read: Callable[[Path], T],
                write: Callable[[Path, T], None]) -> T:
    """`read(path)` when the file exists; else `compute()`, written to `path` atomically with
    `write(file, value)` (the file's suffix is kept, for writers that append one), and returned."""
    if path.exists():
        return read(path)
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial{path.suffix}")
    write(partial, value)
    os.replace(partial, path)
    return value


def write_text_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a partial file beside it, renamed into place: a reader sees the
    old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    os.replace(partial, path)
