"""The DuckDB store: schema and migrations (`schema`), and every SQL statement FORGE runs (`database`).

Import the store as `from forge_core.store import Store`.
"""

from forge_core.store.database import Store, StoreError, dumps, export_fingerprint, utc_now
from forge_core.store.schema import EXPORTED_TABLES, SCHEMA_VERSION

__all__ = ["EXPORTED_TABLES", "SCHEMA_VERSION", "Store", "StoreError", "dumps", "export_fingerprint", "utc_now"]
