"""The store's schema: one migration per version, applied in order by `Store` on first connect."""

# Copies each checkpoint's lineage keys into the columns schema version 6 added (`MIGRATIONS`
# fills every row with it, `FILL_CHECKPOINT_LINEAGE` the rows of the given ids).
COPY_LINEAGE_COLUMNS = """
    UPDATE checkpoints SET
        lambda_in = CAST(lineage ->> '$.lambda_in' AS DOUBLE),
        lambda_out = CAST(lineage ->> '$.lambda_out' AS DOUBLE),
        split_seed = CAST(lineage ->> '$.split_seed' AS INTEGER),
        seed = CAST(lineage ->> '$.seed' AS INTEGER),
        embedder = lineage ->> '$.embedder',
        store_snapshot = lineage ->> '$.store_snapshot',
        benchmarks = CAST(lineage -> '$.benchmarks' AS VARCHAR[])"""

# Fills the `kind` (`Policy.kind`) of crossfit rows stored before schema version 7 recorded it,
# from the policy names of that time.
FILL_CROSSFIT_KINDS = """
    UPDATE crossfit_results SET kind = CASE
        WHEN policy = 'oracle' THEN 'oracle'
        WHEN starts_with(policy, 'always_') THEN 'fixed arm'
        WHEN starts_with(policy, 'forge_') OR starts_with(policy, 'bge_bm25_kl') THEN 'router'
        ELSE 'baseline' END
    WHERE kind IS NULL"""

# Each entry moves the schema one version up; never edit a released entry, append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
    CREATE TABLE imports (
        benchmark VARCHAR PRIMARY KEY, source_path VARCHAR, source_sha256 VARCHAR,
        n_examples INTEGER, n_documents INTEGER, imported_at TIMESTAMP);
    CREATE TABLE examples (
        benchmark VARCHAR, example_id VARCHAR, position INTEGER, question VARCHAR,
        answers VARCHAR[], evidence VARCHAR[], PRIMARY KEY (benchmark, example_id));
    CREATE TABLE documents (
        benchmark VARCHAR, doc_id VARCHAR, position INTEGER, title VARCHAR, text VARCHAR,
        PRIMARY KEY (benchmark, doc_id));
    CREATE TABLE split_manifests (
        benchmark VARCHAR, split_seed INTEGER, source_sha256 VARCHAR,
        n_train INTEGER, n_dev INTEGER, n_test INTEGER, created_at TIMESTAMP,
        PRIMARY KEY (benchmark, split_seed));
    CREATE TABLE splits (
        benchmark VARCHAR, split_seed INTEGER, example_id VARCHAR, split VARCHAR,
        PRIMARY KEY (benchmark, split_seed, example_id));
    CREATE TABLE hosts (name VARCHAR PRIMARY KEY, config JSON, updated_at TIMESTAMP);
    CREATE TABLE arm_outcomes (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        answer VARCHAR, extracted VARCHAR, f1 DOUBLE, em DOUBLE,
        tokens_in INTEGER, tokens_out INTEGER, tokens_reasoning INTEGER, latency_ms DOUBLE,
        error VARCHAR, attempts INTEGER, host_config_hash VARCHAR,
        started_at TIMESTAMP, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id, arm));
    CREATE TABLE probe_outcomes (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, probe VARCHAR,
        answer VARCHAR, tokens_in INTEGER, tokens_out INTEGER, latency_ms DOUBLE,
        error VARCHAR, host_config_hash VARCHAR, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id, probe));
    CREATE TABLE features (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, kind VARCHAR, vals FLOAT[],
        PRIMARY KEY (host, benchmark, example_id, kind));
    CREATE TABLE checkpoints (
        checkpoint_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, stage INTEGER, host VARCHAR,
        variant VARCHAR, n_arms INTEGER, parent VARCHAR, lineage JSON, metrics JSON,
        training_log JSON, state BLOB);
    CREATE TABLE jobs (
        job_id VARCHAR PRIMARY KEY, kind VARCHAR, status VARCHAR, params JSON,
        total INTEGER, done INTEGER, errors INTEGER, message VARCHAR, pid INTEGER,
        started_at TIMESTAMP, updated_at TIMESTAMP, finished_at TIMESTAMP);
    """,
    """
    CREATE TABLE job_logs (
        job_id VARCHAR, seq INTEGER, logged_at TIMESTAMP, payload JSON, PRIMARY KEY (job_id, seq));
    """,
    """
    CREATE TABLE fresh_results (
        run_id VARCHAR, policy VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        f1 DOUBLE, em DOUBLE, calls INTEGER, tokens_in INTEGER, tokens_out INTEGER,
        latency_ms DOUBLE, finished_at TIMESTAMP,
        PRIMARY KEY (run_id, policy, benchmark, example_id));
    """,
    """
    CREATE TABLE crossfit_runs (
        run_id VARCHAR PRIMARY KEY, host VARCHAR, settings JSON, folds INTEGER, created_at TIMESTAMP);
    CREATE TABLE crossfit_results (
        run_id VARCHAR, fold INTEGER, policy VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        f1 DOUBLE, utility DOUBLE, tokens DOUBLE, finished_at TIMESTAMP,
        PRIMARY KEY (run_id, policy, benchmark, example_id));
    """,
    # Deployment accounting: a decision's every host call. Runs stored before it charged no probe
    # and mixed the two accountings, so they go (rerun them with `forge eval --protocol crossfit`).
    """
    DELETE FROM crossfit_runs;
    DROP TABLE crossfit_results;
    CREATE TABLE crossfit_results (
        run_id VARCHAR, fold INTEGER, policy VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        f1 DOUBLE, deploy_utility DOUBLE, answer_utility DOUBLE, deploy_tokens DOUBLE, answer_tokens DOUBLE,
        calls INTEGER, finished_at TIMESTAMP,
        PRIMARY KEY (run_id, policy, benchmark, example_id));
    ALTER TABLE fresh_results ADD COLUMN answer_tokens_in INTEGER;
    ALTER TABLE fresh_results ADD COLUMN answer_tokens_out INTEGER;
    """,
    # The lineage keys that select checkpoints become columns, filled from the lineage JSON.
    """
    ALTER TABLE checkpoints ADD COLUMN lambda_in DOUBLE;
    ALTER TABLE checkpoints ADD COLUMN lambda_out DOUBLE;
    ALTER TABLE checkpoints ADD COLUMN split_seed INTEGER;
    ALTER TABLE checkpoints ADD COLUMN seed INTEGER;
    ALTER TABLE checkpoints ADD COLUMN embedder VARCHAR;
    ALTER TABLE checkpoints ADD COLUMN store_snapshot VARCHAR;
    ALTER TABLE checkpoints ADD COLUMN benchmarks VARCHAR[];
    """ + COPY_LINEAGE_COLUMNS + ";",
    # Each crossfit row records its policy's kind (`Policy.kind`).
    "ALTER TABLE crossfit_results ADD COLUMN kind VARCHAR;" + FILL_CROSSFIT_KINDS + ";",
    # Reasoning on record: how each outcome's reasoning tokens were obtained, probes' reasoning
    # tokens, and each host configuration's depth check (`forge host check`). Rows stored before
    # keep NULL there: not recorded.
    """
    ALTER TABLE arm_outcomes ADD COLUMN reasoning_method VARCHAR;
    ALTER TABLE probe_outcomes ADD COLUMN tokens_reasoning INTEGER;
    ALTER TABLE probe_outcomes ADD COLUMN reasoning_method VARCHAR;
    CREATE TABLE host_checks (
        host VARCHAR, host_config_hash VARCHAR, checked_at TIMESTAMP, report JSON,
        PRIMARY KEY (host, host_config_hash));
    """,
    # Judge rewards: a judge host's rating of one stored (query, arm) outcome; `reward_key` hashes
    # the judge prompt and the judge host's configuration, so another judge adds rows, never replaces.
    """
    CREATE TABLE reward_outcomes (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR, reward_key VARCHAR,
        source VARCHAR, judge_host VARCHAR, judge_config_hash VARCHAR, prompt_hash VARCHAR,
        reward DOUBLE, verdict VARCHAR, tokens_in INTEGER, tokens_out INTEGER, latency_ms DOUBLE,
        error VARCHAR, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id, arm, reward_key));
    """,
    # Stage 0 priced and batched: a host's prices (kept apart from its configuration, so built-in
    # hosts can have prices and configuration hashes do not change) and the provider batches
    # submitted for it (so a rerun resumes polling rather than paying twice).
    """
    CREATE TABLE host_prices (
        host VARCHAR PRIMARY KEY, usd_per_million_in DOUBLE, usd_per_million_out DOUBLE, updated_at TIMESTAMP);
    CREATE TABLE batches (
        batch_id VARCHAR PRIMARY KEY, provider VARCHAR, host VARCHAR, requests_sha256 VARCHAR,
        requests INTEGER, status VARCHAR, completed INTEGER, failed INTEGER, estimated_usd DOUBLE,
        created_at TIMESTAMP, updated_at TIMESTAMP, ingested_at TIMESTAMP);
    """,
    # The router a host uses by default, set by the user (a new training run never takes it over).
    """
    CREATE TABLE default_routers (host VARCHAR PRIMARY KEY, checkpoint_id VARCHAR, set_at TIMESTAMP);
    """,
    # Reproducible ids: a checkpoint's id no longer hashes its weights, so the weights carry their
    # own sha256 (checked on load); a Fresh Online row records the checkpoint its router ran, so a
    # run keeps each policy's answers apart from the others' and redoes only a retrained router's.
    """
    ALTER TABLE checkpoints ADD COLUMN weights_sha256 VARCHAR;
    UPDATE checkpoints SET weights_sha256 = sha256(state);
    ALTER TABLE fresh_results ADD COLUMN checkpoint_id VARCHAR;
    """,
    # Retrievers as configuration (`forge retriever add`): named like hosts; the default BM25
    # retriever is built in and never stored.
    """
    CREATE TABLE retrievers (name VARCHAR PRIMARY KEY, config JSON, updated_at TIMESTAMP);
    """,
    # Live questions kept as traces (the Live query page), listed on the Queries page.
    """
    CREATE TABLE live_traces (
        trace_id VARCHAR PRIMARY KEY, asked_at TIMESTAMP NOT NULL, question VARCHAR NOT NULL,
        benchmark VARCHAR NOT NULL, example_id VARCHAR, host VARCHAR NOT NULL, router VARCHAR NOT NULL,
        lambda_in DOUBLE, lambda_out DOUBLE, arm VARCHAR NOT NULL, margin DOUBLE, answer VARCHAR,
        tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, latency_ms DOUBLE, routing_ms DOUBLE, f1 DOUBLE,
        support_verdict VARCHAR, evaluator VARCHAR);
    """,
    # Each routed crossfit decision's margin in utility units and the runner-up it is taken over
    # (the crossfit report's reliability table); NULL for other policies and for older runs.
    """
    ALTER TABLE crossfit_results ADD COLUMN margin DOUBLE;
    ALTER TABLE crossfit_results ADD COLUMN runner_up VARCHAR;
    """,
    # Evidence is part of an arm's identity (`forge_core.evidence.retrievers.retriever_hash`):
    # arm outcomes and features are keyed by the retriever configuration they were made under;
    # every row stored before has the default BM25 evidence, whose hash is "".
    """
    CREATE TABLE arm_outcomes_keyed (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, arm VARCHAR,
        answer VARCHAR, extracted VARCHAR, f1 DOUBLE, em DOUBLE,
        tokens_in INTEGER, tokens_out INTEGER, tokens_reasoning INTEGER, latency_ms DOUBLE,
        error VARCHAR, attempts INTEGER, host_config_hash VARCHAR,
        started_at TIMESTAMP, finished_at TIMESTAMP, reasoning_method VARCHAR,
        retriever_hash VARCHAR NOT NULL DEFAULT '',
        PRIMARY KEY (host, benchmark, example_id, arm, retriever_hash));
    INSERT INTO arm_outcomes_keyed SELECT *, '' FROM arm_outcomes;
    DROP TABLE arm_outcomes;
    ALTER TABLE arm_outcomes_keyed RENAME TO arm_outcomes;
    CREATE TABLE features_keyed (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, kind VARCHAR, vals FLOAT[],
        retriever_hash VARCHAR NOT NULL DEFAULT '',
        PRIMARY KEY (host, benchmark, example_id, kind, retriever_hash));
    INSERT INTO features_keyed SELECT *, '' FROM features;
    DROP TABLE features;
    ALTER TABLE features_keyed RENAME TO features;
    CREATE TABLE evidence_results (
        benchmark VARCHAR, retriever_hash VARCHAR, k INTEGER, retriever VARCHAR, queries INTEGER,
        query_limit INTEGER, measured_at TIMESTAMP, result JSON, PRIMARY KEY (benchmark, retriever_hash, k));
    """,
    # A live question's evidence: the retriever it was answered under, by name and configuration
    # hash ("": the default BM25); NULL for questions kept before (not recorded). The retriever a
    # host's commands and pages use unless told otherwise (`forge retriever use`; none: bm25).
    """
    ALTER TABLE live_traces ADD COLUMN retriever VARCHAR;
    ALTER TABLE live_traces ADD COLUMN retriever_hash VARCHAR;
    CREATE TABLE default_retrievers (host VARCHAR PRIMARY KEY, retriever VARCHAR, set_at TIMESTAMP);
    """,
    # The training-free gates' probe (`forge_core.enumeration.gate_probes`): the no-context Direct
    # draft again with each output token's two most likely logprobs (TARG's prefix margin, the ladder).
    """
    CREATE TABLE draft_logprobs (
        host VARCHAR, benchmark VARCHAR, example_id VARCHAR, answer VARCHAR,
        tokens_in INTEGER, tokens_out INTEGER, top1 DOUBLE[], top2 DOUBLE[], latency_ms DOUBLE,
        error VARCHAR, host_config_hash VARCHAR, finished_at TIMESTAMP,
        PRIMARY KEY (host, benchmark, example_id));
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
EXPORTED_TABLES: tuple[str, ...] = (  # what `forge store export` writes: derived from a host, worth shipping
    "arm_outcomes", "probe_outcomes", "features", "checkpoints", "crossfit_runs", "crossfit_results",
    "fresh_results", "reward_outcomes", "evidence_results", "draft_logprobs")
# The checkpoint columns copied from its lineage JSON (schema version 6 added them); with stage,
# variant and n_arms, the columns checkpoints are selected by.
CHECKPOINT_LINEAGE_COLUMNS: tuple[str, ...] = (
    "lambda_in", "lambda_out", "split_seed", "seed", "embedder", "store_snapshot", "benchmarks")
# Columns added to exported tables after their first release: an export made before one of them
# loads with NULL there (not recorded), except the columns filled on load (checkpoints' lineage
# columns, crossfit results' kinds: schema version 7).
LATER_COLUMNS: dict[str, tuple[str, ...]] = {
    "checkpoints": (*CHECKPOINT_LINEAGE_COLUMNS, "weights_sha256"),
    "arm_outcomes": ("reasoning_method", "retriever_hash"),
    "features": ("retriever_hash",),
    "probe_outcomes": ("tokens_reasoning", "reasoning_method"),
    "crossfit_results": ("kind", "margin", "runner_up"),
    "fresh_results": ("checkpoint_id",),
}
# Copies the lineage keys of the checkpoints with the given ids into those columns.
FILL_CHECKPOINT_LINEAGE = COPY_LINEAGE_COLUMNS + "\n    WHERE list_contains(?, checkpoint_id)"
TABLES: frozenset[str] = frozenset({
    "meta", "imports", "examples", "documents", "split_manifests", "splits", "hosts", "arm_outcomes",
    "probe_outcomes", "features", "checkpoints", "jobs", "job_logs", "fresh_results", "crossfit_runs",
    "crossfit_results", "host_checks", "reward_outcomes", "host_prices", "batches", "default_routers",
    "retrievers", "live_traces", "evidence_results", "default_retrievers", "draft_logprobs"})
