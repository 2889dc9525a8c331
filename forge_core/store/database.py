"""The `Store` facade: every SQL statement FORGE runs on examples, hosts, outcomes, features,
checkpoints, jobs and results. Opening the file and migrating it live in `connection`, exports and
their loading in `exports`; `Store` offers them all as one object."""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from forge_core.arms import alphabet
from forge_core.errors import InvalidInput
from forge_core.records import (
    GREEDY_PROBE,
    ArmOutcome,
    Document,
    DraftLogprobs,
    Example,
    FreshResult,
    HostPrices,
    LiveTrace,
    ProbeOutcome,
    RewardOutcome,
    SplitAssignment,
    SubmittedBatch,
)
from forge_core.store.connection import FileAttacher, StoreError, StoreFile, first_row, insert_rows, utc_now
from forge_core.store.exports import export_tables, load_export_once, load_exported
from forge_core.store.schema import CHECKPOINT_LINEAGE_COLUMNS, EXPORTED_TABLES, FILL_CHECKPOINT_LINEAGE


@dataclasses.dataclass(frozen=True)
class JobCounts:
    """A running job's counts so far, as its row in the jobs table keeps them (the dashboard's view
    of a job, with its rate and ETA, is `forge_core.jobs.JobProgress`)."""

    job_id: str
    done: int  # units of work finished (calls, for an enumeration)
    errors: int  # of which failed


def _store_job_counts(connection: duckdb.DuckDBPyConnection, counts: JobCounts, message: str = "") -> None:
    """Set a job's counts (and its message) in the jobs table, inside the caller's transaction."""
    connection.execute(
        "UPDATE jobs SET done = ?, errors = ?, message = ?, updated_at = ? WHERE job_id = ?",
        [counts.done, counts.errors, message, utc_now(), counts.job_id],
    )


def row_values(record: Any) -> tuple:
    """A record dataclass's field values in order: `dataclasses.astuple` without its deep copy
    (outcome writes call it for every row)."""
    return _field_getter(type(record))(record)


@functools.cache
def _field_getter(record_type: type) -> Callable[[Any], tuple]:
    names = [field.name for field in dataclasses.fields(record_type)]
    getter = operator.attrgetter(*names)
    return getter if len(names) > 1 else lambda record: (getter(record),)


def _parameter_marks(record_type: type) -> str:
    """One `?` per field of a record dataclass (its table's columns, in order)."""
    return ", ".join("?" * len(dataclasses.fields(record_type)))


def _checkpoint_host(connection: duckdb.DuckDBPyConnection, checkpoint_id: str) -> str | None:
    """The host of a stored checkpoint, or None for an unknown id."""
    row = first_row(connection.execute("SELECT host FROM checkpoints WHERE checkpoint_id = ?", [checkpoint_id]))
    return None if row is None else str(row[0])


def _mark_default_router(connection: duckdb.DuckDBPyConnection, host: str, checkpoint_id: str) -> None:
    """Set (or move) `host`'s default-router mark to `checkpoint_id`."""
    connection.execute(
        "INSERT INTO default_routers VALUES (?, ?, ?) ON CONFLICT (host) DO UPDATE SET "
        "checkpoint_id = excluded.checkpoint_id, set_at = excluded.set_at", [host, checkpoint_id, utc_now()])


def arm_outcome_records(frame: pd.DataFrame) -> list[ArmOutcome]:
    """Rows of `Store.arm_outcomes` as records again (missing values as None), e.g. to write them
    under another host."""
    names = [field.name for field in dataclasses.fields(ArmOutcome)]
    return [ArmOutcome(*(None if pd.isna(value) else value for value in row))
            for row in frame[names].itertuples(index=False)]


# The arm outcomes made under one retriever configuration (the parameter: its hash): its own rows,
# and the Direct rows, which use no evidence and are stored once under "" (the default's hash).
_UNDER_RETRIEVER = "(retriever_hash = ? OR (retriever_hash = '' AND starts_with(arm, 'direct:')))"
_CHECKPOINT_FILTERS = frozenset({"stage", "variant", "n_arms", *CHECKPOINT_LINEAGE_COLUMNS})


class Store(StoreFile):
    """A DuckDB file holding examples, corpora, splits, hosts, outcomes, features and checkpoints."""

    # ------------------------------------------------------------ benchmark imports

    def import_benchmark(
        self,
        benchmark: str,
        source_path: Path,
        source_sha256: str,
        examples: Sequence[Example],
        documents: Sequence[Document],
        split_assignments: Sequence[SplitAssignment],
    ) -> bool:
        """Import one benchmark in a single transaction; returns False when it was already there.

        Re-importing the same file adds nothing; importing a changed file is refused, because
        its splits and outcomes would no longer match what is stored.
        """
        with self.transaction() as connection:
            row = first_row(connection.execute(
                "SELECT source_sha256 FROM imports WHERE benchmark = ?", [benchmark]
            ))
            if row and row[0] == source_sha256:
                return False
            if row:
                raise StoreError(
                    f"{source_path} changed since '{benchmark}' was imported (sha256 {row[0][:12]} "
                    f"now {source_sha256[:12]}); import it into a new store (FORGE_STORE)"
                )
            self._insert_examples(connection, examples)
            self._insert_documents(connection, documents)
            for assignment in split_assignments:
                self._insert_splits(connection, assignment)
            connection.execute(
                "INSERT INTO imports VALUES (?, ?, ?, ?, ?, ?)",
                [benchmark, str(source_path), source_sha256, len(examples), len(documents), utc_now()],
            )
        return True

    @staticmethod
    def _insert_examples(connection: duckdb.DuckDBPyConnection, examples: Sequence[Example]) -> None:
        rows = [(e.benchmark, e.example_id, position, e.question, list(e.answers), list(e.evidence))
                for position, e in enumerate(examples)]
        insert_rows(connection, "examples", pd.DataFrame(rows))

    @staticmethod
    def _insert_documents(connection: duckdb.DuckDBPyConnection, documents: Sequence[Document]) -> None:
        rows = [(d.benchmark, d.doc_id, position, d.title, d.text) for position, d in enumerate(documents)]
        insert_rows(connection, "documents", pd.DataFrame(rows))

    @staticmethod
    def _insert_splits(connection: duckdb.DuckDBPyConnection, assignment: SplitAssignment) -> None:
        counts = {name: 0 for name in ("train", "dev", "test")}
        for split in assignment.splits.values():
            counts[split] += 1
        connection.execute(
            "INSERT INTO split_manifests VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [assignment.benchmark, assignment.split_seed, assignment.source_sha256,
             counts["train"], counts["dev"], counts["test"], utc_now()],
        )
        rows = [(assignment.benchmark, assignment.split_seed, example_id, split)
                for example_id, split in assignment.splits.items()]
        insert_rows(connection, "splits", pd.DataFrame(rows))

    # ------------------------------------------------------------ reading examples and corpora

    def benchmark_stats(self, split_seed: int = 0) -> dict[str, dict[str, Any]]:
        """Per benchmark: example and document counts and split sizes under `split_seed`."""
        with self.connect() as connection:
            examples = dict(connection.execute(
                "SELECT benchmark, count(*) FROM examples GROUP BY benchmark").fetchall())
            documents = dict(connection.execute(
                "SELECT benchmark, count(*) FROM documents GROUP BY benchmark").fetchall())
            split_rows = connection.execute(
                "SELECT benchmark, split, count(*) FROM splits WHERE split_seed = ? "
                "GROUP BY benchmark, split", [split_seed]).fetchall()
        stats = {
            name: {"examples": count, "documents": documents.get(name, 0),
                   "splits": {"train": 0, "dev": 0, "test": 0}}
            for name, count in sorted(examples.items())
        }
        for benchmark, split, count in split_rows:
            stats[benchmark]["splits"][split] = count
        return stats

    def imported_benchmarks(self) -> list[str]:
        """Names of every imported benchmark (built-in or a user's own file), in import order."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute(
                "SELECT benchmark FROM imports ORDER BY imported_at, benchmark").fetchall()]

    def split_manifests(self) -> list[dict[str, Any]]:
        """Every split manifest: benchmark, seed, source hash and sizes."""
        with self.connect() as connection:
            frame = connection.execute(
                "SELECT * FROM split_manifests ORDER BY benchmark, split_seed").fetchdf()
        return frame.to_dict("records")

    def split_ids(self, benchmark: str, split: str, split_seed: int = 0) -> list[str]:
        """Example ids of one split, in import order."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT s.example_id FROM splits s JOIN examples e USING (benchmark, example_id) "
                "WHERE s.benchmark = ? AND s.split = ? AND s.split_seed = ? ORDER BY e.position",
                [benchmark, split, split_seed],
            ).fetchall()
        return [row[0] for row in rows]

    def examples(self, benchmark: str, example_ids: Sequence[str] | None = None) -> list[Example]:
        """Examples of a benchmark in import order, optionally only the given ids."""
        query = "SELECT benchmark, example_id, question, answers, evidence FROM examples WHERE benchmark = ?"
        params: list[Any] = [benchmark]
        if example_ids is not None:
            query += " AND list_contains(?, example_id)"
            params.append(list(example_ids))
        with self.connect() as connection:
            rows = connection.execute(query + " ORDER BY position", params).fetchall()
        return [Example(b, i, q, tuple(a), tuple(ev or ())) for b, i, q, a, ev in rows]

    def documents(self, benchmark: str) -> list[Document]:
        """The benchmark's retrieval corpus in import order (the BM25 index's doc order)."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT title, text FROM documents WHERE benchmark = ? ORDER BY position", [benchmark]
            ).fetchall()
        return [Document(benchmark, title, text) for title, text in rows]

    # ------------------------------------------------------------ retriever configurations

    def save_retriever_config(self, name: str, retriever_config: dict[str, Any]) -> None:
        """Add or replace a named retriever configuration (it never holds a secret)."""
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO retrievers VALUES (?, ?, ?)",
                               [name, dumps(retriever_config), utc_now()])

    def retriever_config(self, name: str) -> dict[str, Any] | None:
        """A stored retriever configuration, or None."""
        with self.connect() as connection:
            row = first_row(connection.execute("SELECT config FROM retrievers WHERE name = ?", [name]))
        return json.loads(row[0]) if row else None

    def retriever_names(self) -> list[str]:
        """Names of the stored retriever configurations."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute("SELECT name FROM retrievers ORDER BY name").fetchall()]

    def set_default_retriever(self, host: str, name: str | None) -> None:
        """Make `name` the retriever `host` uses unless told otherwise (None: back to bm25)."""
        with self.transaction() as connection:
            connection.execute("DELETE FROM default_retrievers WHERE host = ?", [host])
            if name is not None:
                connection.execute("INSERT INTO default_retrievers VALUES (?, ?, ?)", [host, name, utc_now()])

    def default_retrievers(self) -> dict[str, str]:
        """host -> the retriever set as its default (hosts without one are left out)."""
        with self.connect() as connection:
            return dict(connection.execute("SELECT host, retriever FROM default_retrievers ORDER BY host").fetchall())

    def delete_retriever_config(self, name: str) -> bool:
        """Remove a stored retriever configuration; False when there was none."""
        with self.transaction() as connection:
            found = first_row(connection.execute("SELECT count(*) FROM retrievers WHERE name = ?", [name]))[0]
            connection.execute("DELETE FROM retrievers WHERE name = ?", [name])
        return bool(found)

    # ------------------------------------------------------------ host configurations

    def save_host_config(self, name: str, host_config: dict[str, Any]) -> None:
        """Add or replace a named host configuration (it never holds a secret)."""
        with self.transaction() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO hosts VALUES (?, ?, ?)", [name, dumps(host_config), utc_now()]
            )

    def host_config(self, name: str) -> dict[str, Any] | None:
        """A stored host configuration, or None."""
        with self.connect() as connection:
            row = first_row(connection.execute("SELECT config FROM hosts WHERE name = ?", [name]))
        return json.loads(row[0]) if row else None

    def host_names(self) -> list[str]:
        """Names of the stored host configurations."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute("SELECT name FROM hosts ORDER BY name").fetchall()]

    def delete_host_config(self, name: str) -> bool:
        """Remove a stored host configuration; False when there was none."""
        with self.transaction() as connection:
            found = first_row(connection.execute("SELECT count(*) FROM hosts WHERE name = ?", [name]))[0]
            connection.execute("DELETE FROM hosts WHERE name = ?", [name])
        return bool(found)

    # ------------------------------------------------------------ host depth checks

    def save_host_check(self, host: str, host_config_hash: str, report: dict[str, Any]) -> None:
        """Store a host configuration's depth check (`forge host check`), replacing an earlier one."""
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO host_checks VALUES (?, ?, ?, ?)",
                               [host, host_config_hash, utc_now(), dumps(report)])

    def host_check(self, host: str, host_config_hash: str) -> tuple[datetime, dict[str, Any]] | None:
        """(when, report) of the stored depth check of this host configuration, or None."""
        with self.connect() as connection:
            row = first_row(connection.execute(
                "SELECT checked_at, report FROM host_checks WHERE host = ? AND host_config_hash = ?",
                [host, host_config_hash]))
        return (row[0], json.loads(row[1])) if row else None

    # ------------------------------------------------------------ host prices and batches

    def save_host_prices(self, prices: HostPrices) -> None:
        """Set a host's prices (built-in or stored host alike)."""
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO host_prices VALUES (?, ?, ?, ?)",
                               [*row_values(prices), utc_now()])

    def host_prices(self, host: str) -> HostPrices | None:
        """A host's prices, or None when none were set."""
        with self.connect() as connection:
            row = first_row(connection.execute(
                "SELECT host, usd_per_million_in, usd_per_million_out FROM host_prices WHERE host = ?", [host]))
        return HostPrices(*row) if row else None

    def delete_host_prices(self, host: str) -> None:
        """Forget a host's prices."""
        with self.transaction() as connection:
            connection.execute("DELETE FROM host_prices WHERE host = ?", [host])

    def all_host_prices(self) -> dict[str, HostPrices]:
        """Every priced host's prices, by host name (hosts without prices left out), in one query."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT host, usd_per_million_in, usd_per_million_out FROM host_prices ORDER BY host").fetchall()
        return {row[0]: HostPrices(*row) for row in rows}

    def save_batch(self, batch: SubmittedBatch) -> None:
        """Add or update a submitted batch."""
        with self.transaction() as connection:
            connection.execute(f"INSERT OR REPLACE INTO batches VALUES ({_parameter_marks(SubmittedBatch)})",
                               list(row_values(batch)))

    def batches(self, host: str | None = None) -> list[SubmittedBatch]:
        """Submitted batches (of one host, or all), newest first."""
        query, params = "SELECT * FROM batches", []
        if host is not None:
            query, params = query + " WHERE host = ?", [host]
        with self.connect() as connection:
            rows = connection.execute(query + " ORDER BY created_at DESC, batch_id", params).fetchall()
        return [SubmittedBatch(*row) for row in rows]

    def batch(self, batch_id: str) -> SubmittedBatch | None:
        """One submitted batch by its provider id, or None."""
        with self.connect() as connection:
            row = first_row(connection.execute("SELECT * FROM batches WHERE batch_id = ?", [batch_id]))
        return SubmittedBatch(*row) if row else None

    # ------------------------------------------------------------ arm and probe outcomes

    def write_arm_outcome(self, *outcomes: ArmOutcome) -> None:
        """Store finished (query, arm) runs in one transaction, replacing earlier error rows."""
        with self.transaction() as connection:
            connection.executemany(
                f"INSERT OR REPLACE INTO arm_outcomes VALUES ({_parameter_marks(ArmOutcome)})",
                [list(row_values(outcome)) for outcome in outcomes],
            )

    def write_probe_outcome(self, *outcomes: ProbeOutcome) -> None:
        """Store finished probe calls in one transaction."""
        with self.transaction() as connection:
            connection.executemany(
                f"INSERT OR REPLACE INTO probe_outcomes VALUES ({_parameter_marks(ProbeOutcome)})",
                [list(row_values(outcome)) for outcome in outcomes],
            )

    def write_outcomes(self, arms: Sequence[ArmOutcome], probes: Sequence[ProbeOutcome],
                       progress: JobCounts | None = None, attacher: FileAttacher | None = None) -> str | None:
        """Store a batch of arm and probe outcomes in one transaction, replacing rows with the same
        key (the batch must hold one row per key). With `progress`, the same transaction stores the
        job's counts (as `update_job`) and the job's status is returned ("cancelling" once the
        dashboard asked it to stop; None for an unknown job): a running job's progress and its
        cancel check cost no connection of their own. With `attacher`, the batch's transaction
        attaches the file to the attacher's database (`attached_transaction`)."""
        with self.attached_transaction(attacher) if attacher else self.transaction() as connection:
            for table, outcomes in (("arm_outcomes", arms), ("probe_outcomes", probes)):
                frame = pd.DataFrame([row_values(outcome) for outcome in outcomes], dtype=object)
                insert_rows(connection, table, frame, replace=True)
            if progress is None:
                return None
            _store_job_counts(connection, progress)
            row = first_row(connection.execute("SELECT status FROM jobs WHERE job_id = ?", [progress.job_id]))
        return None if row is None else str(row[0])

    def record_greedy_probes_from_direct(self, host: str) -> None:
        """Store every error-free `direct:no_think` outcome that has no greedy probe yet as that
        probe: the greedy probe is the same request, so it needs no second call."""
        with self.transaction() as connection:
            connection.execute(
                """
                INSERT OR REPLACE INTO probe_outcomes
                SELECT host, benchmark, example_id, $probe, answer, tokens_in, tokens_out,
                       latency_ms, NULL, host_config_hash, finished_at, tokens_reasoning, reasoning_method
                FROM arm_outcomes a
                WHERE host = $host AND arm = 'direct:no_think' AND error IS NULL
                  AND NOT EXISTS (SELECT 1 FROM probe_outcomes p
                                  WHERE p.host = a.host AND p.benchmark = a.benchmark
                                    AND p.example_id = a.example_id AND p.probe = $probe
                                    AND p.error IS NULL)
                """,
                {"host": host, "probe": GREEDY_PROBE},
            )

    def finished_arms(self, host: str, benchmark: str, retriever_hash: str = "") -> dict[str, set[str]]:
        """example_id -> arms with a non-error outcome on this host under one retriever
        configuration (Direct arms, which use no evidence, under every one)."""
        return self._finished(
            "SELECT example_id, arm FROM arm_outcomes WHERE host = ? AND benchmark = ? AND error IS NULL"
            f" AND {_UNDER_RETRIEVER}", host, benchmark, retriever_hash)

    def finished_probes(self, host: str, benchmark: str) -> dict[str, set[str]]:
        """example_id -> probes with a non-error outcome on this host."""
        return self._finished(
            "SELECT example_id, probe FROM probe_outcomes WHERE host = ? AND benchmark = ? AND error IS NULL",
            host, benchmark)

    def _finished(self, query: str, *params: str) -> dict[str, set[str]]:
        with self.connect() as connection:
            rows = connection.execute(query, list(params)).fetchall()
        finished: dict[str, set[str]] = {}
        for example_id, name in rows:
            finished.setdefault(example_id, set()).add(name)
        return finished

    def arm_outcomes(self, host: str, benchmark: str | None = None, retriever_hash: str = "") -> pd.DataFrame:
        """All stored arm outcomes of a host (optionally one benchmark), errors included, under one
        retriever configuration (default: the BM25 evidence): its Summary and Raw rows and the
        Direct rows, which use no evidence and are stored once, under "". Never two evidences."""
        query = f"SELECT * FROM arm_outcomes WHERE host = ? AND {_UNDER_RETRIEVER}"
        params: list[Any] = [host, retriever_hash]
        if benchmark is not None:
            query += " AND benchmark = ?"
            params.append(benchmark)
        with self.connect() as connection:
            return connection.execute(query + " ORDER BY benchmark, example_id, arm", params).fetchdf()

    def arm_outcome(self, host: str, benchmark: str, example_id: str, arm: str,
                    retriever_hash: str = "") -> ArmOutcome | None:
        """The stored outcome of one (query, arm) on a host under one retriever configuration (an
        error row included), or None."""
        with self.connect() as connection:
            row = first_row(connection.execute(
                "SELECT * FROM arm_outcomes WHERE host = ? AND benchmark = ? AND example_id = ? AND arm = ?"
                f" AND {_UNDER_RETRIEVER}", [host, benchmark, example_id, arm, retriever_hash]))
        return ArmOutcome(*row) if row else None

    def recent_arm_errors(self, host: str, limit: int) -> list[ArmOutcome]:
        """A host's latest `limit` arm outcomes still stored as error rows, newest first."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT * FROM arm_outcomes WHERE host = ? AND error IS NOT NULL "
                "ORDER BY finished_at DESC NULLS LAST, benchmark, example_id, arm LIMIT ?", [host, limit]).fetchall()
        return [ArmOutcome(*row) for row in rows]

    def answered_arm_tokens_in(self, host: str, limit: int) -> list[tuple[str, str, str, int]]:
        """(benchmark, example_id, arm, tokens_in) of a host's first `limit` answered arm outcomes,
        in `arm_outcomes`' order (benchmark, example_id, arm), under the default BM25 evidence."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT benchmark, example_id, arm, tokens_in FROM arm_outcomes WHERE host = ? AND error IS NULL "
                "AND retriever_hash = '' ORDER BY benchmark, example_id, arm LIMIT ?", [host, limit]).fetchall()

    def mean_tokens_out(self, host: str) -> dict[tuple[str | None, str], float]:
        """Mean output tokens of a host's answered calls by (benchmark, arm or probe name), and
        over all benchmarks by (None, name), under the default BM25 evidence."""
        with self.connect() as connection:
            rows = connection.execute(
                "WITH calls AS (SELECT benchmark, arm AS name, tokens_out FROM arm_outcomes "
                "               WHERE host = $host AND error IS NULL AND retriever_hash = '' "
                "               UNION ALL SELECT benchmark, probe, tokens_out FROM probe_outcomes "
                "               WHERE host = $host AND error IS NULL) "
                "SELECT benchmark, name, avg(tokens_out) FROM calls GROUP BY GROUPING SETS ((benchmark, name), (name))",
                {"host": host}).fetchall()
        return {(benchmark, name): float(mean) for benchmark, name, mean in rows}

    def outcome_benchmarks(self, host: str) -> list[str]:
        """The benchmarks a host has at least one arm outcome on, sorted."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute(
                "SELECT DISTINCT benchmark FROM arm_outcomes WHERE host = ? ORDER BY 1", [host]).fetchall()]

    def reasoning_by_arm(self, host: str, retriever_hash: str = "") -> pd.DataFrame:
        """Per arm, over a host's answered outcomes: count, mean output and reasoning tokens (reasoning
        is part of the output), and how the reasoning counts were obtained (NULL: stored before
        they were recorded); under one retriever configuration (default: the BM25 evidence)."""
        with self.connect() as connection:
            return connection.execute(
                f"""
                SELECT arm, count(*) AS outcomes, avg(tokens_out) AS tokens_out,
                       avg(tokens_reasoning) AS tokens_reasoning,
                       string_agg(DISTINCT coalesce(reasoning_method, 'not recorded'), ', '
                                  ORDER BY coalesce(reasoning_method, 'not recorded')) AS counted_by
                FROM arm_outcomes WHERE host = ? AND error IS NULL AND {_UNDER_RETRIEVER} GROUP BY arm ORDER BY arm
                """, [host, retriever_hash]).fetchdf()

    def probe_outcomes(self, host: str) -> pd.DataFrame:
        """All stored probe outcomes of a host."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT * FROM probe_outcomes WHERE host = ? ORDER BY benchmark, example_id, probe", [host]
            ).fetchdf()

    def write_draft_logprobs(self, *drafts: DraftLogprobs) -> None:
        """Store finished gate drafts in one transaction, replacing earlier rows of their keys."""
        with self.transaction() as connection:
            connection.executemany(
                f"INSERT OR REPLACE INTO draft_logprobs VALUES ({_parameter_marks(DraftLogprobs)})",
                [[list(value) if isinstance(value, tuple) else value for value in row_values(draft)]
                 for draft in drafts],
            )

    def finished_drafts(self, host: str) -> set[tuple[str, str]]:
        """(benchmark, example_id) of every error-free gate draft of a host."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT benchmark, example_id FROM draft_logprobs WHERE host = ? AND error IS NULL", [host]).fetchall()
        return {(benchmark, example_id) for benchmark, example_id in rows}

    def draft_logprobs(self, host: str) -> pd.DataFrame:
        """Every error-free gate draft of a host (answer, tokens, per-token top-2 logprobs)."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT * FROM draft_logprobs WHERE host = ? AND error IS NULL ORDER BY benchmark, example_id", [host]
            ).fetchdf()

    def coverage(self, n_arms_by_host: dict[str, int], split_seed: int = 0) -> dict[str, dict[str, Any]]:
        """Per host: queries with all K arms of the K-arm alphabet free of errors, how many also
        have all four probes, and their counts by benchmark and by split (under the default BM25
        evidence: `forge evidence arms` compares other retrievers)."""
        coverage = {}
        with self.connect() as connection:
            for host, n_arms in n_arms_by_host.items():
                rows = connection.execute(
                    """
                    WITH complete AS (
                        SELECT benchmark, example_id FROM arm_outcomes
                        WHERE host = ? AND error IS NULL AND list_contains(?, arm) AND retriever_hash = ''
                        GROUP BY ALL HAVING count(*) = ?),
                    probed AS (
                        SELECT benchmark, example_id FROM probe_outcomes
                        WHERE host = ? AND error IS NULL GROUP BY ALL HAVING count(*) >= 4)
                    SELECT c.benchmark, coalesce(s.split, 'unassigned') AS split,
                           count(*) AS complete, count(p.example_id) AS with_probes
                    FROM complete c
                    LEFT JOIN probed p USING (benchmark, example_id)
                    LEFT JOIN splits s ON s.benchmark = c.benchmark AND s.example_id = c.example_id
                                      AND s.split_seed = ?
                    GROUP BY ALL ORDER BY ALL
                    """,
                    [host, [arm.name for arm in alphabet(n_arms)], n_arms, host, split_seed],
                ).fetchall()
                coverage[host] = _coverage_summary(rows, n_arms)
        return coverage

    def hosts_with_outcomes(self) -> list[str]:
        """Names of hosts that have at least one stored arm outcome."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute(
                "SELECT DISTINCT host FROM arm_outcomes ORDER BY host").fetchall()]

    def evidence_hashes_with_outcomes(self, host: str) -> set[str]:
        """The retriever configuration hashes the host has Summary or Raw outcomes under ("": the
        default BM25 evidence; Direct outcomes, stored under "", use no evidence and do not count)."""
        with self.connect() as connection:
            return {r[0] for r in connection.execute(
                "SELECT DISTINCT retriever_hash FROM arm_outcomes WHERE host = ? AND NOT starts_with(arm, 'direct:')",
                [host]).fetchall()}

    def host_config_hashes(self, host: str) -> list[str]:
        """The distinct host configuration hashes a host's outcomes were produced under."""
        with self.connect() as connection:
            return [r[0] for r in connection.execute(
                "SELECT DISTINCT host_config_hash FROM arm_outcomes WHERE host = ? ORDER BY 1", [host]).fetchall()]

    def split_table(self, split_seed: int = 0) -> pd.DataFrame:
        """Every assigned example's split under one split seed: benchmark, example_id, split."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT benchmark, example_id, split FROM splits WHERE split_seed = ?", [split_seed]
            ).fetchdf()

    # ------------------------------------------------------------ exports (the functions of `exports`)

    def export_tables(self, directory: Path, tables: Sequence[str] = EXPORTED_TABLES,
                      host: str | None = None) -> dict[str, int]:
        """Write tables to zstd Parquet files (sorted, so exports diff well), with `host` only that
        host's rows (`exports.export_tables`); returns row counts."""
        return export_tables(self, directory, tables, host)

    def load_exported(self, directory: Path, replace_errors: bool = False,
                      tables: Sequence[str] = EXPORTED_TABLES) -> dict[str, int]:
        """Add the rows of exported Parquet files (of `tables`) that the store lacks; with
        `replace_errors`, an imported answered outcome also replaces an error row. Returns rows
        added per table."""
        return load_exported(self, directory, replace_errors, tables)

    def load_export_once(self, directory: Path) -> dict[str, int] | None:
        """`load_exported`, unless this exact export was loaded into this store before: then None."""
        return load_export_once(self, directory)

    # ------------------------------------------------------------ checkpoints

    def save_checkpoint(self, record: dict[str, Any], state: bytes) -> None:
        """Store a router checkpoint: its metadata record and the serialized weights with their
        sha256 (an id stands for its lineage, so saving a lineage twice keeps the first), with the
        lineage keys it is selected by copied into their columns."""
        with self.transaction() as connection:
            connection.execute(
                "INSERT INTO checkpoints (checkpoint_id, created_at, stage, host, variant, n_arms, parent, lineage, "
                "metrics, training_log, state, weights_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, sha256(?)) "
                "ON CONFLICT DO NOTHING",
                [record["checkpoint_id"], utc_now(), record["stage"], record["host"], record["variant"],
                 record["n_arms"], record.get("parent"), dumps(record["lineage"]), dumps(record["metrics"]),
                 dumps(record["training_log"]), state, state],
            )
            connection.execute(FILL_CHECKPOINT_LINEAGE, [[record["checkpoint_id"]]])

    def set_default_router(self, host: str, checkpoint_id: str | None) -> None:
        """Mark a checkpoint of `host` as its default router (None: remove the mark); refuses a
        checkpoint of another host or an unknown one."""
        with self.transaction() as connection:
            if checkpoint_id is None:
                connection.execute("DELETE FROM default_routers WHERE host = ?", [host])
                return
            if _checkpoint_host(connection, checkpoint_id) != host:
                raise InvalidInput(f"no checkpoint '{checkpoint_id}' of host '{host}' (see `forge checkpoints`)")
            _mark_default_router(connection, host, checkpoint_id)

    def mark_checkpoint_as_default(self, checkpoint_id: str) -> str | None:
        """Mark a checkpoint as its own host's default router; returns that host, or None for an
        unknown checkpoint (nothing marked)."""
        with self.transaction() as connection:
            host = _checkpoint_host(connection, checkpoint_id)
            if host is not None:
                _mark_default_router(connection, host, checkpoint_id)
        return host

    def marked_default_router(self, host: str) -> str | None:
        """The checkpoint marked as `host`'s default router, or None (no mark, or its checkpoint gone)."""
        with self.connect() as connection:
            row = first_row(connection.execute(
                "SELECT d.checkpoint_id FROM default_routers d JOIN checkpoints c USING (checkpoint_id) "
                "WHERE d.host = ?", [host]))
        return None if row is None else str(row[0])

    def delete_checkpoints(self, checkpoint_ids: Sequence[str]) -> None:
        """Delete checkpoints; refuses unknown ids and a parent whose child stays."""
        ids = list(dict.fromkeys(checkpoint_ids))
        with self.transaction() as connection:
            known = {row[0] for row in connection.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE list_contains(?, checkpoint_id)", [ids]).fetchall()}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise InvalidInput(f"no checkpoint {', '.join(unknown)}")
            children = connection.execute(
                "SELECT checkpoint_id, parent FROM checkpoints WHERE list_contains(?, parent) "
                "AND NOT list_contains(?, checkpoint_id)", [ids, ids]).fetchall()
            if children:
                child, parent = children[0]
                raise InvalidInput(f"checkpoint {parent} is the parent of {child}: delete both or neither")
            connection.execute("DELETE FROM checkpoints WHERE list_contains(?, checkpoint_id)", [ids])

    def checkpoint(self, checkpoint_id: str) -> tuple[dict[str, Any], bytes] | None:
        """A checkpoint's metadata record and weights, or None."""
        with self.connect() as connection:
            frame = connection.execute(
                "SELECT checkpoint_id, created_at, stage, host, variant, n_arms, parent, lineage, metrics, "
                "training_log, weights_sha256, state FROM checkpoints WHERE checkpoint_id = ?",
                [checkpoint_id]).fetchdf()
        if not len(frame):
            return None
        row = _parent_none_when_null(frame).to_dict("records")[0]
        state = bytes(row.pop("state"))
        for key in ("lineage", "metrics", "training_log"):
            row[key] = json.loads(row[key])
        return row, state

    def checkpoints(self, host: str | None = None) -> pd.DataFrame:
        """Checkpoint summaries (no weights, no logs), newest first."""
        query = ("SELECT checkpoint_id, created_at, stage, host, variant, n_arms, parent, lineage, metrics "
                 "FROM checkpoints")
        params: list[Any] = []
        if host is not None:
            query += " WHERE host = ?"
            params.append(host)
        with self.connect() as connection:
            frame = connection.execute(query + " ORDER BY created_at DESC", params).fetchdf()
        return _parent_none_when_null(frame)

    def find_checkpoints(self, host: str, retriever_hash: str = "", **columns: Any) -> pd.DataFrame:
        """The checkpoints of a host trained under one retriever configuration (its hash; "": the
        default BM25 evidence) whose columns equal the given values (None matches NULL only),
        newest first: checkpoint_id, created_at, stage, store_snapshot, metrics, conditioned (a
        cost-conditioned router: its lineage has a `conditioning`). Selectable: stage, variant,
        n_arms and `CHECKPOINT_LINEAGE_COLUMNS`. A router calibrated from another host's checkpoint
        (`forge eval transfer --calibrate`: its lineage has `calibrated_from`) is never selected."""
        unknown = sorted(set(columns) - _CHECKPOINT_FILTERS)
        if unknown:
            raise ValueError(f"checkpoints have no column {', '.join(unknown)} to select by")
        conditions = "".join(f" AND {name} IS NOT DISTINCT FROM ?" for name in columns)
        with self.connect() as connection:
            return connection.execute(
                "SELECT checkpoint_id, created_at, stage, store_snapshot, metrics, "
                "json_exists(lineage, '$.conditioning') AS conditioned FROM checkpoints "
                f"WHERE host = ? AND NOT json_exists(lineage, '$.calibrated_from'){conditions} "
                "AND coalesce(lineage ->> '$.retriever_hash', '') = ? "
                "ORDER BY created_at DESC", [host, *columns.values(), retriever_hash]).fetchdf()

    # ------------------------------------------------------------ jobs

    def create_job(self, job_id: str, kind: str, params: dict[str, Any], total: int, pid: int) -> None:
        """Record a new running job."""
        now = utc_now()
        with self.transaction() as connection:
            connection.execute(
                "INSERT INTO jobs VALUES (?, ?, 'running', ?, ?, 0, 0, '', ?, ?, ?, NULL)",
                [job_id, kind, dumps(params), total, pid, now, now],
            )

    def update_job(self, job_id: str, done: int, errors: int, message: str = "") -> None:
        """Progress of a running job (read by the dashboard while it runs)."""
        with self.transaction() as connection:
            _store_job_counts(connection, JobCounts(job_id, done, errors), message)

    def finish_job(self, job_id: str, status: str, message: str = "", progress: JobCounts | None = None) -> None:
        """Close a job as finished, failed, cancelled or interrupted; with `progress`, its final
        counts are stored in the same transaction."""
        now = utc_now()
        with self.transaction() as connection:
            if progress is not None:
                _store_job_counts(connection, progress)
            connection.execute(
                "UPDATE jobs SET status = ?, message = ?, updated_at = ?, finished_at = ? WHERE job_id = ?",
                [status, message, now, now, job_id],
            )

    def request_job_cancel(self, job_id: str) -> None:
        """Ask a running job to stop after its calls in flight."""
        with self.transaction() as connection:
            connection.execute(
                "UPDATE jobs SET status = 'cancelling' WHERE job_id = ? AND status = 'running'", [job_id]
            )

    def job(self, job_id: str) -> dict[str, Any] | None:
        """One job's row, or None."""
        with self.connect() as connection:
            frame = connection.execute("SELECT * FROM jobs WHERE job_id = ?", [job_id]).fetchdf()
        return frame.to_dict("records")[0] if len(frame) else None

    def jobs(self, kind: str | None = None, limit: int = 50) -> pd.DataFrame:
        """The most recent jobs, newest first."""
        query = "SELECT * FROM jobs"
        params: list[Any] = []
        if kind is not None:
            query += " WHERE kind = ?"
            params.append(kind)
        with self.connect() as connection:
            return connection.execute(query + " ORDER BY started_at DESC LIMIT ?", [*params, limit]).fetchdf()

    # ------------------------------------------------------------ features

    def write_features(self, rows: Sequence[tuple[str, str, str, str, Sequence[float]]],
                       retriever_hash: str = "") -> int:
        """Store (host, benchmark, example_id, kind, vals) rows made under one retriever
        configuration in one transaction, replacing rows with the same key; returns how many were
        written. Host-independent kinds use host ""."""
        if not rows:
            return 0
        frame = pd.DataFrame(list(rows))
        frame[5] = retriever_hash
        with self.transaction() as connection:
            insert_rows(connection, "features", frame, replace=True)
        return len(frame)

    def feature_rows(
        self, host: str, kinds: Sequence[str], keys: Sequence[tuple[str, str]] | None = None,
        retriever_hash: str = "",
    ) -> pd.DataFrame:
        """Stored features of one host ("" for host-independent kinds), the given kinds and one
        retriever configuration, with columns benchmark, example_id, kind, vals (float32 arrays);
        optionally only the given (benchmark, example_id) keys."""
        query = "SELECT f.benchmark, f.example_id, f.kind, f.vals FROM features f"
        with self.connect() as connection:
            if keys is not None:
                wanted = pd.DataFrame(
                    {"benchmark": [key[0] for key in keys], "example_id": [key[1] for key in keys]},
                    dtype=object,
                )
                connection.register("wanted_keys", wanted)
                query += (" SEMI JOIN wanted_keys w"
                          " ON f.benchmark = w.benchmark AND f.example_id = w.example_id")
            return connection.execute(
                query + " WHERE f.host = ? AND list_contains(?, f.kind) AND f.retriever_hash = ?"
                " ORDER BY f.benchmark, f.example_id, f.kind",
                [host, list(kinds), retriever_hash],
            ).fetchdf()

    def feature_keys(self, host: str, kind: str, retriever_hash: str = "") -> set[tuple[str, str]]:
        """(benchmark, example_id) of every stored feature row of one host, kind and retriever."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT benchmark, example_id FROM features WHERE host = ? AND kind = ? AND retriever_hash = ?",
                [host, kind, retriever_hash]).fetchall()
        return {(benchmark, example_id) for benchmark, example_id in rows}

    # ------------------------------------------------------------ evidence measured before any host call

    def save_evidence_results(self, benchmark: str, k: int, queries: int, query_limit: int | None,
                              retrievers: Sequence[dict[str, Any]]) -> None:
        """Store one `forge evidence compare` (each retriever's JSON row, keyed by its configuration
        hash), replacing an earlier measurement of the same benchmark, retriever and k."""
        now = utc_now()
        with self.transaction() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO evidence_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [[benchmark, row["config_hash"], k, row["name"], queries, query_limit, now, dumps(row)]
                 for row in retrievers])

    def evidence_results(self) -> pd.DataFrame:
        """Every stored evidence measurement: benchmark, retriever_hash, k, retriever, queries,
        query_limit, measured_at and result (the retriever's JSON row, parsed)."""
        with self.connect() as connection:
            frame = connection.execute(
                "SELECT * FROM evidence_results ORDER BY benchmark, k, measured_at, retriever").fetchdf()
        frame["result"] = [json.loads(text) for text in frame["result"]]
        return frame

    # ------------------------------------------------------------ Fresh Online results

    def write_fresh_result(self, result: FreshResult) -> None:
        """Store one finished (policy, query) of a Fresh Online run."""
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO fresh_results VALUES "
                               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", list(row_values(result)))

    def fresh_results(self, run_id: str) -> pd.DataFrame:
        """The finished (policy, query) rows of a Fresh Online run."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT * FROM fresh_results WHERE run_id = ? ORDER BY policy, benchmark, example_id", [run_id]
            ).fetchdf()

    # ------------------------------------------------------------ live questions

    def write_live_trace(self, trace: LiveTrace) -> None:
        """Keep one question asked live (a trace id seen before is kept as first written)."""
        with self.transaction() as connection:
            values = list(row_values(trace))
            connection.execute(f"INSERT OR IGNORE INTO live_traces VALUES ({', '.join('?' * len(values))})", values)

    def live_traces(self, host: str | None = None) -> pd.DataFrame:
        """The questions asked live (of one host when given), newest first."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT * FROM live_traces WHERE ? IS NULL OR host = ? ORDER BY asked_at DESC", [host, host]
            ).fetchdf()

    # ------------------------------------------------------------ cross-fitted evaluation

    def save_crossfit_run(self, run_id: str, host: str, settings: dict[str, Any], folds: int) -> None:
        """Register a cross-fitted evaluation run (once; a resumed run keeps its first row)."""
        with self.transaction() as connection:
            connection.execute("INSERT OR IGNORE INTO crossfit_runs VALUES (?, ?, ?, ?, ?)",
                               [run_id, host, dumps(settings), folds, utc_now()])

    def crossfit_runs(self, host: str | None = None) -> pd.DataFrame:
        """Registered cross-fitted runs, newest first, with the folds finished so far."""
        query = ("SELECT r.run_id, r.host, r.settings, r.folds, r.created_at,"
                 " (SELECT count(DISTINCT fold) FROM crossfit_results c WHERE c.run_id = r.run_id) AS folds_done"
                 " FROM crossfit_runs r")
        with self.connect() as connection:
            if host is None:
                return connection.execute(query + " ORDER BY r.created_at DESC").fetchdf()
            return connection.execute(query + " WHERE r.host = ? ORDER BY r.created_at DESC", [host]).fetchdf()

    def crossfit_result_count(self, run_id: str) -> int:
        """How many out-of-fold decisions a run has stored (every fold and policy)."""
        with self.connect() as connection:
            return connection.execute("SELECT count(*) FROM crossfit_results WHERE run_id = ?", [run_id]).fetchone()[0]

    def write_crossfit_fold(self, run_id: str, fold: int, rows: pd.DataFrame) -> None:
        """Some policies' out-of-fold decisions of one fold, in one transaction (stored whole or
        not at all; the fold's rows of other policies stay). Columns: policy, kind, benchmark,
        example_id, arm, f1, deploy_utility, answer_utility, deploy_tokens, answer_tokens, calls, and
        optionally a router's margin (utility units) and the runner-up arm it is taken over."""
        frame = rows.assign(run_id=run_id, fold=fold, finished_at=utc_now())
        for column in ("margin", "runner_up"):
            if column not in frame:
                frame[column] = None
        frame = frame[["run_id", "fold", "policy", "benchmark", "example_id", "arm", "f1", "deploy_utility",
                       "answer_utility", "deploy_tokens", "answer_tokens", "calls", "finished_at", "kind",
                       "margin", "runner_up"]]
        with self.transaction() as connection:
            connection.execute(
                "DELETE FROM crossfit_results WHERE run_id = ? AND fold = ? AND list_contains(?, policy)",
                [run_id, fold, sorted(set(frame["policy"]))])
            insert_rows(connection, "crossfit_results", frame)

    def crossfit_results(self, run_id: str) -> pd.DataFrame:
        """The stored out-of-fold decisions of a run."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT * FROM crossfit_results WHERE run_id = ? ORDER BY policy, benchmark, example_id", [run_id]
            ).fetchdf()

    # ------------------------------------------------------------ judge rewards and support verdicts

    def write_reward_outcome(self, *outcomes: RewardOutcome) -> None:
        """Store judged (query, arm) rows in one transaction, replacing earlier rows of the same key."""
        with self.transaction() as connection:
            connection.executemany(f"INSERT OR REPLACE INTO reward_outcomes VALUES ({_parameter_marks(RewardOutcome)})",
                                   [list(row_values(outcome)) for outcome in outcomes])

    def judged_outcomes(self, host: str, reward_key: str) -> set[tuple[str, str, str]]:
        """(benchmark, example_id, arm) of a host's outcomes judged without error under `reward_key`."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT benchmark, example_id, arm FROM reward_outcomes WHERE host = ? AND reward_key = ? "
                "AND error IS NULL", [host, reward_key]).fetchall()
        return {tuple(row) for row in rows}

    def reward_outcomes(self, host: str, reward_key: str | None = None) -> pd.DataFrame:
        """A host's stored ratings (judge rewards and support verdicts, errors included), optionally of
        one reward key."""
        query = "SELECT * FROM reward_outcomes WHERE host = ?"
        params: list[Any] = [host]
        if reward_key is not None:
            query += " AND reward_key = ?"
            params.append(reward_key)
        with self.connect() as connection:
            return connection.execute(query + " ORDER BY benchmark, example_id, arm, reward_key", params).fetchdf()

    def reward_keys(self, host: str, source: str = "judge") -> pd.DataFrame:
        """The ratings of one source ("judge" rewards or "support" verdicts) stored for a host: one
        row per reward key with its judge, prompt hash, rows and newest row, newest first."""
        with self.connect() as connection:
            return connection.execute(
                "SELECT reward_key, judge_host, judge_config_hash, prompt_hash, count(*) AS n_rows, "
                "count(reward) AS n_rewards, max(finished_at) AS latest FROM reward_outcomes WHERE host = ? "
                "AND source = ? GROUP BY ALL ORDER BY latest DESC", [host, source]).fetchdf()

    # ------------------------------------------------------------ job logs

    def append_job_log(self, job_id: str, seq: int, payload: dict[str, Any]) -> None:
        """One log row of a running job (a training step or epoch), readable while it runs."""
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO job_logs VALUES (?, ?, ?, ?)",
                               [job_id, seq, utc_now(), dumps(payload)])

    def job_logs(self, job_id: str) -> list[dict[str, Any]]:
        """A job's log rows in order."""
        with self.connect() as connection:
            rows = connection.execute(
                "SELECT payload FROM job_logs WHERE job_id = ? ORDER BY seq", [job_id]).fetchall()
        return [json.loads(row[0]) for row in rows]

    def outcomes_written(self) -> dict[str, Any]:
        """Error-free arm outcomes and the newest arm and probe outcome times: with the row counts,
        what changes when an outcome is rewritten in place (a retried error, a re-enumerated arm)."""
        with self.connect() as connection:
            answered, arms_at = first_row(connection.execute(
                "SELECT count(*) FILTER (WHERE error IS NULL), max(finished_at) FROM arm_outcomes"))
            probes_at = first_row(connection.execute("SELECT max(finished_at) FROM probe_outcomes"))[0]
        return {"answered": answered, "arms_at": str(arms_at), "probes_at": str(probes_at)}

    def table_counts(self) -> dict[str, int]:
        """Row count of every table (for diagnostics and idempotence tests)."""
        with self.connect() as connection:
            tables = [r[0] for r in connection.execute(
                "SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]
            return {t: first_row(connection.execute(f'SELECT count(*) FROM "{t}"'))[0] for t in tables}


def _coverage_summary(rows: list[tuple], n_arms: int) -> dict[str, Any]:
    summary: dict[str, Any] = {"queries_complete": 0, "arms": n_arms, "with_probes": 0,
                               "by_benchmark": {}, "by_split": {}}
    for benchmark, split, complete, with_probes in rows:
        summary["queries_complete"] += complete
        summary["with_probes"] += with_probes
        bench = summary["by_benchmark"].setdefault(benchmark, {"complete": 0, "with_probes": 0})
        bench["complete"] += complete
        bench["with_probes"] += with_probes
        summary["by_split"][split] = summary["by_split"].get(split, 0) + complete
    return summary


def dumps(value: Any) -> str:
    """JSON for the store's JSON columns: stable key order."""
    return json.dumps(value, sort_keys=True)


def _parent_none_when_null(frame: pd.DataFrame) -> pd.DataFrame:
    """Checkpoint rows with a NULL parent as None (pandas turns an all-NULL column into NaN)."""
    return frame.assign(parent=frame["parent"].astype(object).where(frame["parent"].notna(), None))
