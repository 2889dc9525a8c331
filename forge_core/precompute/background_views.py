"""The dashboard's slow first views (`view_cache.view_steps`) computed by a background process, so
that `forge store load-demo` and `forge app` return at once and a page waits only for its own view.

The process (`python -m forge_core.precompute.background_views STORE CACHE_DIR`) runs at a lower CPU
priority than the dashboard and holds an exclusive lock on `precompute/lock` under the cache
directory while it works: one runs at a time, and a second start leaves at once. After every view it
rewrites `precompute/progress.json` (atomically): the views planned, those done, and whether all are
done or why it stopped. A page asks `views_progress` whether
the view it needs is still being computed; when no process runs (finished, failed, killed) it
computes what it needs itself, as without this module.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge_core.errors import MissingStep
from forge_core.evaluation.file_cache import write_text_atomically
from forge_core.store import Store, utc_now

log = logging.getLogger(__name__)

PROGRESS_DIR = "precompute"  # under the cache directory: the lock, the progress file and the process's log
NICENESS = 10  # the background process yields the CPU to the dashboard's own reruns


@dataclass(frozen=True)
class ViewsProgress:
    """What the background process has computed so far, as `progress.json` says."""

    planned: tuple[str, ...]  # the views' names (`view_cache.view_name`), in the order they are computed
    labels: tuple[str, ...]  # what each says in a progress line, in the same order
    done: tuple[str, ...]  # names computed (or found impossible for now: no crossfit run, no router)
    running: bool  # a process holds the lock, i.e. is still computing
    finished: bool  # every planned view was computed
    error: str | None  # why the process stopped before the end

    def waiting_for(self, *names: str) -> bool:
        """True while the process runs and one of `names` it plans is not done yet."""
        return self.running and any(name in self.planned and name not in self.done for name in names)

    @property
    def fraction(self) -> float:
        """Share of the planned views done, in [0, 1]."""
        return len(self.done) / len(self.planned) if self.planned else 1.0

    @property
    def current(self) -> str | None:
        """The label of the view being computed now (None when none is)."""
        pending = [label for name, label in zip(self.planned, self.labels) if name not in self.done]
        return pending[0] if self.running and pending else None

    def line(self) -> str:
        """One line for a page or the command line."""
        count = f"{len(self.done)} of {len(self.planned)} views ready"
        if self.running:
            return f"Computing the dashboard's first views in the background: {count}; now {self.current}."
        if self.error:
            return f"The background computation of the first views stopped ({self.error}); {count}."
        return f"The dashboard's first views: {count}" + ("." if self.finished else " (the process has gone).")


def views_progress(cache_dir: Path) -> ViewsProgress | None:
    """The background process's progress under `cache_dir`, None if it never started there."""
    directory = Path(cache_dir) / PROGRESS_DIR
    try:
        kept = json.loads((directory / "progress.json").read_text())
    except (OSError, ValueError):
        return None
    return ViewsProgress(tuple(kept["planned"]), tuple(kept["labels"]), tuple(kept["done"]),
                         _lock_held(directory / "lock"), "finished_at" in kept, kept.get("error"))


def start_background_views(store: Store, cache_dir: Path) -> bool:
    """Start the background process for the store and cache directory, unless one is running there;
    returns whether it started one. Its output goes to `precompute/log.txt`."""
    directory = Path(cache_dir) / PROGRESS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    if _lock_held(directory / "lock"):
        return False
    command = [sys.executable, "-m", "forge_core.precompute.background_views", str(store.path), str(cache_dir)]
    with open(directory / "log.txt", "ab") as output:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                         start_new_session=True)  # outlives the command that started it
    return True


def compute_views(store: Store, cache_dir: Path, steps: Sequence | None = None) -> bool:
    """Compute every view of `view_steps` (or `steps`) under the lock, recording progress after each;
    returns False (computing nothing) if another process holds the lock."""
    from forge_core.precompute.view_cache import view_steps

    directory = Path(cache_dir) / PROGRESS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    with _exclusive(directory / "lock") as locked:
        if not locked:
            return False
        steps = list(view_steps(store, cache_dir) if steps is None else steps)
        progress = {"planned": [step.name for step in steps], "labels": [step.label for step in steps], "done": [],
                    "started_at": utc_now().isoformat()}
        _write(directory, progress)
        try:
            for step in steps:
                _compute(step)
                progress["done"].append(step.name)
                _write(directory, progress)
        except Exception as error:
            _write(directory, progress | {"error": f"{type(error).__name__}: {error}"})
            raise
        _write(directory, progress | {"finished_at": utc_now().isoformat()})
    return True


def _compute(step) -> None:
    log.info("precompute: %s", step.label)
    try:
        step.compute()
    except MissingStep as missing:
        log.info("precompute: %s: none (%s)", step.label, missing)


def _write(directory: Path, progress: dict) -> None:
    write_text_atomically(directory / "progress.json", json.dumps(progress))


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[bool]:
    """Hold an exclusive lock on `path` for the block (yields False, holding nothing, if taken)."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_held(path: Path) -> bool:
    """True while some process holds the exclusive lock on `path`."""
    if not path.exists():
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def main(argv: Sequence[str] | None = None) -> None:
    """The background process: compute the views of STORE into CACHE_DIR at a lower priority."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("store", type=Path)
    parser.add_argument("cache_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.nice(NICENESS)
    compute_views(Store(args.store), args.cache_dir)


if __name__ == "__main__":
    main()
