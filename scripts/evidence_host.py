"""Seed the per-retriever Stage 0's own host (issue #39) with what the demo store already holds.

The comparison of the host's arms under bm25, dense and hybrid (docs/results.md, "The host's arms
under each retriever") needs every arm under bm25 for each query it covers. The demo store holds
bm25's outcomes of the embedded host's first 51 HotpotQA test queries only, and adding more under
`embedded` would change every table of the demo store's main host. So the comparison runs under a
host of its own, `embedded-evidence`: the same built-in model (`forge host add embedded-evidence
--kind embedded --model qwen2.5-coder-1.5b`, the same configuration hash as `embedded`), its
outcomes exported apart, to `data/evidence/`.

This script copies, from `--from` (default `embedded`) to `--to`, the HotpotQA outcomes of every
query the source holds under a retriever other than bm25, with those queries' bm25 and Direct
outcomes: the queries already run under every retriever, which need no second host call. Rows the
target holds already are kept. Then `forge enumerate --host embedded-evidence --retriever R
--per-benchmark N` runs the rest.

    python scripts/evidence_host.py --retriever dense --retriever hybrid
"""

from __future__ import annotations

import argparse
import dataclasses

import pandas as pd

from forge_core import config
from forge_core.evidence.retrievers import get_retriever_config, retriever_hash
from forge_core.store import Store
from forge_core.store.database import arm_outcome_records

BENCHMARK = "hotpotqa"


def seed(store: Store, source: str, target: str, retrievers: list[str]) -> int:
    """Copy the source's outcomes of the queries it holds under any of `retrievers` (and their bm25
    and Direct outcomes) to `target`; returns the rows copied."""
    hashes = [retriever_hash(get_retriever_config(store, name)) for name in retrievers]
    under = [store.arm_outcomes(source, BENCHMARK, config_hash) for config_hash in hashes]
    covered = set().union(*(frame.loc[frame["retriever_hash"] == config_hash, "example_id"]
                            for frame, config_hash in zip(under, hashes)))
    frame = _every_evidence(store, source, hashes)
    frame = frame[frame["example_id"].isin(covered)]
    key = ["example_id", "arm", "retriever_hash"]
    held = _every_evidence(store, target, hashes).set_index(key).index
    frame = frame[~frame.set_index(key).index.isin(held)]
    records = [dataclasses.replace(record, host=target) for record in arm_outcome_records(frame)]
    if records:
        store.write_arm_outcome(*records)
    return len(records)


def _every_evidence(store: Store, host: str, hashes: list[str]) -> pd.DataFrame:
    """The host's HotpotQA outcomes under bm25 and each retriever hash (Direct rows once)."""
    frames = [store.arm_outcomes(host, BENCHMARK, config_hash) for config_hash in ["", *hashes]]
    return pd.concat(frames).drop_duplicates(["example_id", "arm", "retriever_hash"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", default="embedded")
    parser.add_argument("--to", dest="target", default="embedded-evidence")
    parser.add_argument("--retriever", action="append", required=True, help="a retriever besides bm25")
    arguments = parser.parse_args()
    store = Store(config.store_path())
    copied = seed(store, arguments.source, arguments.target, arguments.retriever)
    print(f"copied {copied} outcomes of '{arguments.source}' to '{arguments.target}'")


if __name__ == "__main__":
    main()
