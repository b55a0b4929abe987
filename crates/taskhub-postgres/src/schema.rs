//! The layout of one task hub (one schema per hub, so several hubs share a database, isolated)
//! and its versioned migrations.
//!
//! `schema_migrations` records each applied version. Creating a hub applies every migration in
//! one transaction under a two-key advisory lock ([`MIGRATION_LOCK_CLASS`], the schema's name),
//! so two processes creating the same hub at once migrate it once; opening one applies what is missing the same way, and
//! refuses a hub whose version is newer than this build, naming both versions.
//!
//! Lock order (READ COMMITTED; every transaction takes row locks in this order, so none waits
//! in a cycle): `fences` (a checkpoint's `FOR SHARE`; a lease write that changes the epoch
//! updates it after its `partitions` row, and nothing else locks `partitions`), `histories`,
//! `history_events`, `instances`, `queue_messages` (a checkpoint inserts its outbound
//! messages, new rows nobody else can lock, before its instance row, and deletes the consumed
//! ones last; claims with `FOR UPDATE SKIP LOCKED` never wait), then `dead_letters` and
//! `payloads`, which no checkpoint touches. The hub's clear (`clear.rs`) takes the data tables
//! whole before it deletes anything.

use deadpool_postgres::Object;
use taskhub_storage::{StorageError, StorageResult};

use crate::errors::PgResultExt;

/// Version 1: the task hub objects of DESIGN §2.
///
/// * The epoch lives in `fences`, apart from the lease row that renewals rewrite every few
///   seconds: a checkpoint's `FOR SHARE` on it never makes a renewal wait.
/// * Queue rows are narrow (the body is the only wide column; large payloads live in
///   `payloads`); the queue table's autovacuum runs early and unthrottled, so the dead rows
///   every delivery leaves do not pile up.
/// * Text keys are `COLLATE "C"`: listings page by code point, as on every other backend.
const V1: &str = r#"
CREATE SEQUENCE versions;

CREATE TABLE hub (
    id                 int PRIMARY KEY CHECK (id = 1),
    partition_count    bigint NOT NULL,
    created_at         bigint NOT NULL,
    prohibited_workers text NOT NULL DEFAULT '[]'
);

CREATE TABLE partitions (
    partition  bigint PRIMARY KEY,
    owner      text,
    next_owner text,
    epoch      bigint NOT NULL,
    draining   bool NOT NULL,
    retiring   bool NOT NULL,
    offline    bool NOT NULL,
    updated_at bigint NOT NULL,
    turns      bigint NOT NULL DEFAULT 0,
    doorbell   bigint NOT NULL DEFAULT 0,
    etag       bigint NOT NULL
) WITH (fillfactor = 50);

CREATE TABLE fences (
    partition bigint PRIMARY KEY,
    epoch     bigint NOT NULL
);

CREATE TABLE histories (
    instance_id  text COLLATE "C" PRIMARY KEY,
    execution_id text NOT NULL,
    etag         bigint NOT NULL,
    event_count  bigint NOT NULL
) WITH (fillfactor = 80);

CREATE TABLE history_events (
    instance_id  text COLLATE "C" NOT NULL,
    execution_id text NOT NULL,
    seq          bigint NOT NULL,
    event        text NOT NULL,
    PRIMARY KEY (instance_id, execution_id, seq)
);

CREATE TABLE instances (
    instance_id     text COLLATE "C" PRIMARY KEY,
    name            text COLLATE "C" NOT NULL,
    version         text,
    execution_id    text NOT NULL,
    status          text NOT NULL,
    input           text NOT NULL,
    output          text,
    failure         text,
    custom_status   text,
    created_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    completed_at    bigint,
    scheduled_start bigint,
    partition       bigint NOT NULL,
    tags            jsonb,
    executions      text,
    etag            bigint NOT NULL
) WITH (fillfactor = 80);
CREATE INDEX instances_by_status ON instances (status, instance_id);
CREATE INDEX instances_by_name ON instances (name, instance_id);
CREATE INDEX instances_by_created ON instances (created_at, instance_id);

CREATE TABLE queue_messages (
    id            bigserial PRIMARY KEY,
    queue         bigint NOT NULL,
    visible_at    bigint NOT NULL,
    dequeue_count bigint NOT NULL DEFAULT 0,
    enqueued_at   bigint NOT NULL,
    receipt       bigint,
    body          text NOT NULL
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_insert_scale_factor = 0.0,
    autovacuum_vacuum_insert_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0
);
CREATE INDEX queue_messages_visible ON queue_messages (queue, visible_at, id);

CREATE TABLE payloads (
    instance_id text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (instance_id, name)
);

CREATE TABLE dead_letters (
    id               bigserial PRIMARY KEY,
    queue            bigint NOT NULL,
    body             text NOT NULL,
    reason           text NOT NULL,
    dequeue_count    bigint NOT NULL,
    dead_lettered_at bigint NOT NULL
);
"#;

/// Version 2: the process registry. Every process of the hub announces itself with the schema
/// version its build writes and renews a heartbeat (server time); a later migration refuses
/// while a process of an older build is alive. Processes of builds before this one cannot
/// announce; version 2 only adds a table, which they never touch.
const V2: &str = r#"
CREATE TABLE processes (
    id             text COLLATE "C" PRIMARY KEY,
    kind           text NOT NULL,
    host           text NOT NULL,
    pid            bigint NOT NULL,
    schema_version bigint NOT NULL,
    build_version  text NOT NULL,
    started_at     bigint NOT NULL,
    heartbeat_at   bigint NOT NULL
);
"#;

/// The first key of the migrations' advisory lock (`pg_advisory_xact_lock(class, hashtext(schema))`):
/// "THMG", Taskhub's migrations.
pub const MIGRATION_LOCK_CLASS: i32 = 0x5448_4d47;

/// The version that brings the process registry.
const HAS_PROCESS_REGISTRY: i64 = 2;

/// The migrations, in order: applying the first `n` gives schema version `n`.
pub const MIGRATIONS: &[&str] = &[V1, V2];

/// The schema version this build writes (and the newest it opens).
#[must_use]
pub fn latest_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

/// The schema of the hub called `hub` (`taskhub_<lower-case name>`).
///
/// # Errors
/// `InvalidArgument` unless the name is 1 to 45 ASCII letters, digits and underscores (the
/// runtime's `task_hub_name` rule is stricter).
pub fn schema_name(hub: &str) -> StorageResult<String> {
    if hub.is_empty()
        || hub.len() > 45
        || !hub.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(StorageError::InvalidArgument(format!(
            "task hub name {hub:?}: a PostgreSQL hub's name must be 1 to 45 ASCII letters, \
             digits and underscores"
        )));
    }
    Ok(format!("taskhub_{}", hub.to_ascii_lowercase()))
}

/// Whether the schema exists.
pub(crate) async fn exists(client: &Object, schema: &str) -> StorageResult<bool> {
    let row = client
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .await
        .ctx("task hub schema")?;
    Ok(row.is_some())
}

/// Creates the schema if `create`, then brings it to [`latest_version`] in one transaction;
/// returns the version. Refuses a schema of a newer version.
pub(crate) async fn migrate(client: &mut Object, schema: &str, create: bool) -> StorageResult<i64> {
    migrate_with(client, schema, create, MIGRATIONS).await
}

/// [`migrate`] with the scripts given (a test adds a later one to see a migration the process
/// registry guards).
pub(crate) async fn migrate_with(
    client: &mut Object,
    schema: &str,
    create: bool,
    scripts: &[&str],
) -> StorageResult<i64> {
    let latest = i64::try_from(scripts.len()).unwrap_or(i64::MAX);
    let what = format!("task hub schema {schema}");
    let mut tx = client.transaction().await.ctx(&what)?;
    // A migration may wait for another process's and build indexes on large tables: neither
    // of the connection's waiting limits applies to it.
    tx.batch_execute("SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0")
        .await
        .ctx(&what)?;
    // One migrator per hub at a time, across processes: a two-key lock, in Taskhub's own key
    // space, so it never collides with an application's one-key advisory locks. The one-key
    // lock of earlier builds is taken first too, so that during a rolling upgrade a migration
    // of an older build and one of this build still exclude each other.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($2)), pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK_CLASS, &schema],
    )
    .await
    .ctx(&what)?;
    if create {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await
            .ctx(&what)?;
    }
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version    bigint PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .ctx(&what)?;
    let found: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .ctx(&what)?
        .get(0);
    check_known(&what, found, latest)?;
    if found >= HAS_PROCESS_REGISTRY && found < latest {
        // Server time, as the heartbeats were written.
        let now: i64 = tx
            .query_one(&format!("SELECT {}", crate::codec::NOW_MS), &[])
            .await
            .ctx(&what)?
            .get(0);
        let records = crate::processes::list(&tx).await?;
        let target = u32::try_from(latest).unwrap_or(u32::MAX);
        let now = crate::codec::ts_from_sql("server time", now)?;
        taskhub_storage::refuse_older_processes(&what, target, &records, now)?;
    }
    let start = usize::try_from(found).unwrap_or(usize::MAX);
    for (i, script) in scripts.iter().enumerate().skip(start) {
        let version = i64::try_from(i + 1).unwrap_or(i64::MAX);
        tx.batch_execute(script)
            .await
            .ctx(&format!("{what}: migration to version {version}"))?;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&version],
        )
        .await
        .ctx(&what)?;
    }
    crate::upkeep::tune_tables(&mut tx, &what).await?;
    tx.commit().await.ctx(&what)?;
    Ok(found.max(latest))
}

fn check_known(what: &str, found: i64, latest: i64) -> StorageResult<()> {
    if found > latest {
        return Err(StorageError::NewerSchema {
            what: what.to_owned(),
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: u32::try_from(latest).unwrap_or(u32::MAX),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn schema_names() {
        assert_eq!(schema_name("TaskHub").unwrap(), "taskhub_taskhub");
        assert!(schema_name("bad\"name").is_err());
        assert!(schema_name("").is_err());
        let err = check_known("hub", latest_version() + 1, latest_version())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("schema {}", latest_version() + 1))
                && err.contains(&format!("up to {}", latest_version()))
                && err.contains("written by a newer build"),
            "{err}"
        );
    }
}
