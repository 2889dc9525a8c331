"""The DuckDB store: the `Store` facade and every SQL statement (`database`), opening and migrating
the file (`connection`), exports and their loading (`exports`), the schema (`schema`), the
lifecycle of a job's row in the jobs table (`job_runs`).

Import the store as `from forge_core.store import Store`.
"""

from forge_core.store.connection import StoreError, utc_now
from forge_core.store.database import Store, dumps
from forge_core.store.exports import export_fingerprint
from forge_core.store.job_runs import JobRun, job_run
from forge_core.store.schema import EXPORTED_TABLES, SCHEMA_VERSION

__all__ = [
    "EXPORTED_TABLES", "SCHEMA_VERSION", "JobRun", "Store", "StoreError", "dumps", "export_fingerprint", "job_run",
    "utc_now",
]
