"""The Action map's computed UMAPs and clusters (the `.npy` files `cached_array` keeps under the
cache directory's `umap/`) as one Parquet file that travels with the demo export, so a fresh
store's first Action map or Queries view reads them instead of computing a UMAP (tens of seconds
on a busy CPU). A file is named by a digest of its settings and input, so one that does not match
the store's queries is simply never read."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from forge_core.evaluation.file_cache import cached_file

log = logging.getLogger(__name__)

MAP_CACHE_FILE = "umap_coordinates.parquet"  # in the demo export's directory
CACHED_NAME = re.compile(r"(umap|clusters)-[0-9a-f]{24}\.npy")


def export_map_cache(cache_dir: Path, path: Path) -> int:
    """Write every cached UMAP and cluster array of `cache_dir` to the Parquet file `path` (one row
    each: file name, shape, values); returns how many."""
    rows = []
    for file in sorted(Path(cache_dir).glob("*.npy")):
        if CACHED_NAME.fullmatch(file.name):
            array = np.load(file, allow_pickle=False)
            rows.append({"file": file.name, "dtype": str(array.dtype), "shape": list(array.shape),
                         "values": array.ravel().astype(np.float64).tolist()})
    frame = pd.DataFrame(rows, columns=["file", "dtype", "shape", "values"])
    partial = path.with_name(path.name + ".partial")
    frame.to_parquet(partial, compression="zstd", index=False)
    partial.replace(path)
    return len(rows)


def import_map_cache(path: Path, cache_dir: Path) -> int:
    """Write the arrays of a `export_map_cache` file into `cache_dir` (files already there are
    kept; each written atomically); returns how many the file holds (0 without the file)."""
    if not path.exists():
        return 0
    frame = pd.read_parquet(path)
    for row in frame.itertuples():
        if not CACHED_NAME.fullmatch(row.file):
            continue  # never a path of our choosing: only the names `cached_array` writes
        array = np.asarray(row.values, dtype=np.float64).astype(row.dtype).reshape(tuple(row.shape))
        cached_file(Path(cache_dir) / row.file, lambda array=array: array, lambda file: None,
                    lambda file, value: np.save(file, value, allow_pickle=False))
    log.info("%d cached map arrays from %s in %s", len(frame), path, cache_dir)
    return len(frame)
