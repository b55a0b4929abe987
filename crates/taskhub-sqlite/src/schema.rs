//! The schema and its versioned migrations, and how every connection is set up.
//!
//! The schema version is `PRAGMA user_version`. [`MIGRATIONS`] is an ordered list of SQL
//! scripts: script `i` takes the schema from version `i` to `i + 1`. Opening a database applies
//! the missing scripts in one `BEGIN IMMEDIATE` transaction (so two processes opening the same
//! new file migrate it once), and refuses a database whose version is newer than this build.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use taskhub_core::Timestamp;
use taskhub_storage::{StorageError, StorageResult};

use crate::codec::ts_to_sql;
use crate::errors::{map_sql, SqlResultExt};
use crate::options::Durability;

/// Version 7: the process registry. Every process of the hub announces itself here with the
/// schema version its build writes and renews a heartbeat; a later migration refuses while a
/// process of an older build is alive (see [`check_no_older_processes`]). Processes of builds
/// before this one cannot announce: only their leases show them.
const V7: &str = "
CREATE TABLE processes (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    host           TEXT NOT NULL,
    pid            INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    build_version  TEXT NOT NULL,
    started_at     INTEGER NOT NULL,
    heartbeat_at   INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 6: history events in chunks, one row per write (a turn's events) numbered in the
/// order written, and one small index table per instance key range holding the history's head
/// (`seq` -1: current execution, ETag, event count) next to where each chunk is. Rows keyed by
/// (instance, event) grew every instance's leaf page at a random place: B-tree pages split and
/// rebalanced with their siblings on most turns, and history pages were most of the WAL. Now a
/// commit's chunks fill the chunk table's last pages, and a turn's head update and new chunk
/// entry share one small page. Each old event row becomes a chunk of one event.
const V6: &str = "
CREATE TABLE history_chunks (
    id     INTEGER PRIMARY KEY,
    events TEXT NOT NULL
);
CREATE TABLE history_index (
    instance_id  TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    chunk        INTEGER,
    execution_id TEXT,
    etag         INTEGER,
    event_count  INTEGER,
    PRIMARY KEY (instance_id, seq)
) WITHOUT ROWID;
INSERT INTO history_chunks (id, events)
    SELECT ROW_NUMBER() OVER (ORDER BY instance_id, seq), event FROM history_events;
INSERT INTO history_index (instance_id, seq, chunk)
    SELECT instance_id, seq, ROW_NUMBER() OVER (ORDER BY instance_id, seq) FROM history_events;
INSERT INTO history_index (instance_id, seq, execution_id, etag, event_count)
    SELECT instance_id, -1, execution_id, etag, event_count FROM histories;
DROP TABLE history_events;
DROP TABLE histories;
";

/// Version 5: each partition's work-item doorbell (rung by its owner when it leaves work items
/// unclaimed on the shared queue).
const V5: &str = "
ALTER TABLE partitions ADD COLUMN doorbell INTEGER NOT NULL DEFAULT 0;
";

/// Version 4: instance tags (a JSON object, NULL for none) and the records of executions
/// that ended by continue-as-new (a JSON array, NULL for none).
const V4: &str = "
ALTER TABLE instances ADD COLUMN tags TEXT;
ALTER TABLE instances ADD COLUMN executions TEXT;
";

/// Version 3: each partition's cumulative count of committed turns (the hub's throughput),
/// and instances indexed by (creation time, ID) for listings by creation time.
const V3: &str = "
ALTER TABLE partitions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
DROP INDEX instances_by_created;
CREATE INDEX instances_by_created ON instances (created_at, instance_id);
";

/// Version 2: workers barred from holding partitions (a JSON array of names).
const V2: &str = "
ALTER TABLE hub ADD COLUMN prohibited_workers TEXT NOT NULL DEFAULT '[]';
";

/// Version 1: the task hub objects of DESIGN §2.
const V1: &str = "
CREATE TABLE hub (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    partition_count INTEGER NOT NULL,
    created_at      INTEGER NOT NULL
);

-- One counter for every ETag and receipt the store hands out: values never repeat, even
-- after a row is deleted and created again.
CREATE TABLE counters (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT INTO counters (id, value) VALUES (1, 0);

CREATE TABLE partitions (
    partition  INTEGER PRIMARY KEY,
    owner      TEXT,
    next_owner TEXT,
    epoch      INTEGER NOT NULL,
    draining   INTEGER NOT NULL,
    retiring   INTEGER NOT NULL,
    offline    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    etag       INTEGER NOT NULL
);

-- The history sentinel of each instance: its current execution, ETag and event count.
CREATE TABLE histories (
    instance_id  TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL,
    etag         INTEGER NOT NULL,
    event_count  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE history_events (
    instance_id  TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    execution_id TEXT NOT NULL,
    event        TEXT NOT NULL,
    PRIMARY KEY (instance_id, seq)
) WITHOUT ROWID;

CREATE TABLE instances (
    instance_id     TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    version         TEXT,
    execution_id    TEXT NOT NULL,
    status          TEXT NOT NULL,
    input           TEXT NOT NULL,
    output          TEXT,
    failure         TEXT,
    custom_status   TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    scheduled_start INTEGER,
    partition       INTEGER NOT NULL,
    etag            INTEGER NOT NULL
);
CREATE INDEX instances_by_status ON instances (status, instance_id);
CREATE INDEX instances_by_name ON instances (name, instance_id);
CREATE INDEX instances_by_created ON instances (created_at);

-- Queue messages in enqueue order (id). The index lets a dequeue walk a queue in id order
-- and skip invisible messages without touching the table.
CREATE TABLE queue_messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT NOT NULL,
    body          TEXT NOT NULL,
    visible_at    INTEGER NOT NULL,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    enqueued_at   INTEGER NOT NULL,
    receipt       INTEGER
);
CREATE INDEX queue_messages_by_queue ON queue_messages (queue, id, visible_at);

CREATE TABLE payloads (
    instance_id TEXT NOT NULL,
    name        TEXT NOT NULL,
    data        BLOB NOT NULL,
    UNIQUE (instance_id, name)
);

CREATE TABLE dead_letters (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    queue            TEXT NOT NULL,
    body             TEXT NOT NULL,
    reason           TEXT NOT NULL,
    dequeue_count    INTEGER NOT NULL,
    dead_lettered_at INTEGER NOT NULL
);
";

/// The migrations, in order: applying the first `n` gives schema version `n`.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7];

/// The schema version this build writes (and the newest it opens).
#[must_use]
pub fn latest_version() -> u32 {
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// Page cache per connection, as SQLite's negative `cache_size` (KiB): 16 MiB.
const CACHE_SIZE_KIB: i64 = -16 * 1024;

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The writer: sets WAL mode and the sync policy.
    Writer,
    /// A reader: `query_only`.
    Reader,
}

/// Opens and sets up one connection. Errors name the path.
pub(crate) fn connect(
    path: &Path,
    role: Role,
    durability: Durability,
    busy_timeout: Duration,
) -> StorageResult<Connection> {
    let what = describe(path);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| open_err(&what, e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| open_err(&what, e))?;
    // The first statement that reads the file: random bytes fail here with NOTADB.
    let mode: String = retry_busy(busy_timeout, || {
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
    })
    .map_err(|e| open_err(&what, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StorageError::Unavailable(format!(
            "{what}: could not switch to WAL mode (journal_mode is {mode})"
        )));
    }
    conn.pragma_update(None, "synchronous", durability.pragma_value())
        .map_err(|e| open_err(&what, e))?;
    if role == Role::Reader {
        conn.pragma_update(None, "query_only", true)
            .map_err(|e| open_err(&what, e))?;
    }
    conn.pragma_update(None, "cache_size", CACHE_SIZE_KIB)
        .map_err(|e| open_err(&what, e))?;
    if role == Role::Writer {
        // The writer re-runs a batch with a savepoint per request when one failed; SQLite keeps
        // the pages a savepoint may roll back to in a sub-journal, a temporary file unless
        // temp_store is MEMORY.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(|e| open_err(&what, e))?;
    }
    // Plans do not depend on bound values (the query planner stability guarantee): otherwise
    // SQLite re-prepares a cached statement whenever a value it planned with is rebound.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| open_err(&what, e))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Retries `f` while SQLite answers `BUSY` without waiting, until `timeout` has passed.
///
/// SQLite skips the busy handler where waiting could deadlock (two connections switching a
/// new file to WAL at once, or upgrading a read lock), so opening needs its own retry.
#[expect(
    clippy::disallowed_methods,
    reason = "a synchronous retry while opening the file, bounded in real time: it blocks a \
              thread (std::thread::sleep), where the async Clock::sleep cannot be awaited"
)]
fn retry_busy<T>(
    timeout: Duration,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Runs a statement without parameters (`BEGIN`, `COMMIT`, `SAVEPOINT`...) through the
/// connection's statement cache, so it is parsed once per connection, not per call.
pub(crate) fn exec_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Brings the schema to [`latest_version`], in one transaction. `now` (the store's clock)
/// tells live leases from stale ones (see [`check_no_live_workers`]).
pub(crate) fn migrate(
    conn: &Connection,
    path: &Path,
    busy_timeout: Duration,
    now: Timestamp,
) -> StorageResult<u32> {
    migrate_with(conn, path, busy_timeout, now, MIGRATIONS)
}

/// [`migrate`] with the list of scripts given (tests add a later one to see a migration that
/// the process registry guards).
fn migrate_with(
    conn: &Connection,
    path: &Path,
    busy_timeout: Duration,
    now: Timestamp,
    scripts: &[&str],
) -> StorageResult<u32> {
    let what = describe(path);
    let latest = count(scripts);
    let found = retry_busy(busy_timeout, || user_version(conn)).map_err(|e| open_err(&what, e))?;
    check_known(&what, found, latest)?;
    if found == latest {
        return Ok(found);
    }
    retry_busy(busy_timeout, || conn.execute_batch("BEGIN IMMEDIATE"))
        .map_err(|e| open_err(&what, e))?;
    let result = apply_migrations(conn, &what, now, scripts);
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// The body of the migration transaction (`BEGIN IMMEDIATE` is open): applies the missing
/// scripts, sets the version and commits.
fn apply_migrations(
    conn: &Connection,
    what: &str,
    now: Timestamp,
    scripts: &[&str],
) -> StorageResult<u32> {
    let latest = count(scripts);
    // Re-read under the write lock: another process may have migrated meanwhile.
    let found = user_version(conn).map_err(|e| open_err(what, e))?;
    check_known(what, found, latest)?;
    if found == latest {
        conn.execute_batch("COMMIT").ctx(what)?;
        return Ok(found);
    }
    if (1..REPLACES_HISTORY_TABLES).contains(&found) {
        check_no_live_workers(conn, what, now, latest)?;
    }
    if found >= HAS_PROCESS_REGISTRY {
        check_no_older_processes(conn, what, now, latest)?;
    }
    let start = usize::try_from(found).unwrap_or(usize::MAX);
    for (i, script) in scripts.iter().enumerate().skip(start) {
        conn.execute_batch(script)
            .ctx(&format!("{what}: migration to schema version {}", i + 1))?;
    }
    conn.pragma_update(None, "user_version", latest).ctx(what)?;
    conn.execute_batch("COMMIT").ctx(what)?;
    Ok(latest)
}

/// How many scripts (the version they migrate to).
fn count(scripts: &[&str]) -> u32 {
    u32::try_from(scripts.len()).unwrap_or(u32::MAX)
}

/// The schema version that brings the process registry (version 7). A file at an older
/// version has none: its processes can only be seen by their leases.
const HAS_PROCESS_REGISTRY: u32 = 7;

/// Refuses to migrate to `target` while a process of an older build announced in the registry
/// heartbeat within [`PROCESS_LIVENESS_WINDOW`](taskhub_storage::PROCESS_LIVENESS_WINDOW)
/// (workers with or without partitions, `serve`, endpoints), or while a partition lease was
/// renewed within [`LIVE_LEASE_WINDOW`]: a worker of a build before the registry (it kept
/// running through the additive v7 migration) shows only by its lease. Either would not
/// notice the new schema. The error names each one (a registered worker with a lease twice).
fn check_no_older_processes(
    conn: &Connection,
    what: &str,
    now: Timestamp,
    target: u32,
) -> StorageResult<()> {
    let records = crate::processes::list(conn)?;
    let registered = taskhub_storage::refuse_older_processes(what, target, &records, now);
    let leased = check_no_live_workers(conn, what, now, target);
    match (registered, leased) {
        (
            Err(StorageError::OlderProcesses { mut processes, .. }),
            Err(StorageError::OlderProcesses {
                processes: more, ..
            }),
        ) => {
            processes.extend(more);
            Err(StorageError::OlderProcesses {
                what: what.to_owned(),
                target,
                processes,
            })
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(()), Ok(())) => Ok(()),
    }
}

/// The schema version that replaces the tables older builds keep histories in (version 6).
const REPLACES_HISTORY_TABLES: u32 = 6;

/// How recently a partition lease must have been renewed for its owner to count as running
/// (the default renewal interval is 10 s, the lease 30 s).
const LIVE_LEASE_WINDOW: Duration = Duration::from_secs(60);

/// Refuses to replace the history tables while a process of an older build may still use the
/// file: one that already had it open would not notice the new schema, and every turn it
/// loads would fail until its messages were dead-lettered. A lease renewed within
/// [`LIVE_LEASE_WINDOW`] means a running worker; stop every process of the hub first (a
/// crashed one's lease stops counting after the window).
fn check_no_live_workers(
    conn: &Connection,
    what: &str,
    now: Timestamp,
    target: u32,
) -> StorageResult<()> {
    let window = i64::try_from(LIVE_LEASE_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let since = ts_to_sql(now).saturating_sub(window);
    let owners: Vec<String> = conn
        .prepare(
            "SELECT DISTINCT owner FROM partitions
             WHERE owner IS NOT NULL AND updated_at > ?1 ORDER BY owner",
        )
        .and_then(|mut s| {
            s.query_map([since], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()
        })
        .ctx(what)?;
    if owners.is_empty() {
        return Ok(());
    }
    Err(StorageError::OlderProcesses {
        what: what.to_owned(),
        target,
        processes: owners
            .into_iter()
            .map(|o| {
                format!(
                    "worker {o} (holds a partition lease renewed in the last {} s)",
                    LIVE_LEASE_WINDOW.as_secs()
                )
            })
            .collect(),
    })
}

/// The schema version stored in the file.
pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

fn check_known(what: &str, found: u32, latest: u32) -> StorageResult<()> {
    if found > latest {
        return Err(StorageError::NewerSchema {
            what: what.to_owned(),
            found,
            supported: latest,
        });
    }
    Ok(())
}

/// How errors name the database.
pub(crate) fn describe(path: &Path) -> String {
    format!("sqlite database {}", path.display())
}

/// Errors while opening: "not a database" gets a message that says what to do.
fn open_err(what: &str, err: rusqlite::Error) -> StorageError {
    match map_sql(what, err) {
        StorageError::Corrupt { what, detail } => StorageError::Corrupt {
            what,
            detail: format!(
                "{detail} (the file exists but is not a SQLite database, or it is damaged)"
            ),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
    use super::*;

    /// A later migration than this build has: what a newer build would run.
    const NEXT: &str = "CREATE TABLE next_feature (x INTEGER);";

    const NOW: u64 = 1_700_000_000_000;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    /// A database at this build's version with one process record of `schema` that last
    /// heartbeat at `beat`.
    fn hub_with_process(schema: u32, beat: u64) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        migrate(
            &conn,
            Path::new(":memory:"),
            Duration::from_secs(1),
            at(NOW),
        )
        .unwrap();
        conn.execute(
            "INSERT INTO processes (id, kind, host, pid, schema_version, build_version,
                                    started_at, heartbeat_at)
             VALUES ('old-serve', 'serve', 'box-1', 321, ?1, '0.9.0', ?2, ?2)",
            rusqlite::params![schema, i64::try_from(beat).unwrap()],
        )
        .unwrap();
        conn
    }

    fn next_scripts() -> Vec<&'static str> {
        let mut scripts = MIGRATIONS.to_vec();
        scripts.push(NEXT);
        scripts
    }

    #[test]
    fn a_migration_is_refused_while_an_older_process_without_a_lease_is_alive() {
        // The old process holds no lease: only its registry record shows it.
        let conn = hub_with_process(latest_version(), NOW - 10_000);
        let scripts = next_scripts();
        let err = migrate_with(
            &conn,
            Path::new("hub.db"),
            Duration::from_secs(1),
            at(NOW),
            &scripts,
        )
        .unwrap_err();
        assert!(
            matches!(err, StorageError::OlderProcesses { .. }),
            "{err:?}"
        );
        let text = err.to_string();
        for part in [
            "old-serve",
            "serve",
            "box-1",
            "pid 321",
            &format!("schema {}", latest_version()),
            "0.9.0",
        ] {
            assert!(text.contains(part), "{part} missing from: {text}");
        }
        assert_eq!(
            user_version(&conn).unwrap(),
            latest_version(),
            "nothing migrated"
        );
        assert!(conn.is_autocommit(), "the transaction was rolled back");
    }

    #[test]
    fn a_migration_goes_ahead_once_the_older_process_is_stale() {
        let conn = hub_with_process(latest_version(), NOW - 10_000);
        let scripts = next_scripts();
        let later = NOW - 10_000 + 61_000; // past the liveness window
        let version = migrate_with(
            &conn,
            Path::new("hub.db"),
            Duration::from_secs(1),
            at(later),
            &scripts,
        )
        .unwrap();
        assert_eq!(version, latest_version() + 1);
        assert_eq!(user_version(&conn).unwrap(), latest_version() + 1);
    }

    #[test]
    fn a_migration_is_refused_while_a_worker_of_a_build_before_the_registry_holds_a_lease() {
        // A stale registry record, but a lease renewed 10 s ago by a worker that never
        // announced (its build predates the registry).
        let conn = hub_with_process(latest_version(), NOW - 600_000);
        conn.execute(
            "INSERT INTO partitions (partition, owner, next_owner, epoch, draining, retiring,
                                     offline, updated_at, etag)
             VALUES (0, 'pre-registry-worker', NULL, 3, 0, 0, 0, ?1, 1)",
            [i64::try_from(NOW - 10_000).unwrap()],
        )
        .unwrap();
        let scripts = next_scripts();
        let migrate_at = |ms: u64| {
            migrate_with(
                &conn,
                Path::new("hub.db"),
                Duration::from_secs(1),
                at(ms),
                &scripts,
            )
        };
        let err = migrate_at(NOW).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, StorageError::OlderProcesses { target, .. }
                if target == latest_version() + 1),
            "{err:?}"
        );
        assert!(text.contains("pre-registry-worker"), "{text}");
        assert!(
            !text.contains("old-serve"),
            "the stale record is not named: {text}"
        );
        assert_eq!(user_version(&conn).unwrap(), latest_version());
        // Once the lease is stale too, the migration goes ahead.
        assert_eq!(migrate_at(NOW + 61_000).unwrap(), latest_version() + 1);
    }

    #[test]
    fn processes_of_the_new_build_do_not_hold_a_migration_back() {
        let conn = hub_with_process(latest_version() + 1, NOW - 1_000);
        let scripts = next_scripts();
        migrate_with(
            &conn,
            Path::new("hub.db"),
            Duration::from_secs(1),
            at(NOW),
            &scripts,
        )
        .unwrap();
        assert_eq!(user_version(&conn).unwrap(), latest_version() + 1);
    }
}
