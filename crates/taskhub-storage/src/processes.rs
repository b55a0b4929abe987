//! The process registry: every process serving a hub (workers, `serve`, the gRPC and HTTP
//! endpoints) announces itself with the schema version its build writes and renews a
//! heartbeat, so that a migration can refuse while a process of an older build is alive, and
//! an operator can see who runs on the hub (`taskhub workers`).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use taskhub_core::Timestamp;

use crate::error::{StorageError, StorageResult};

/// How recently a process must have renewed its heartbeat to count as alive. A migration
/// refuses while a process of an older build heartbeat within this window; a process that
/// stopped without forgetting its record (a crash) stops counting after it. The runtime's
/// `process_heartbeat_interval` is at most a third of it.
pub const PROCESS_LIVENESS_WINDOW: Duration = Duration::from_secs(60);

/// How long the record of a process that stopped without forgetting it (a crash, a kill) is
/// kept: stale but listed, for an operator to see what ran. A process that announces itself
/// forgets the records whose heartbeat is older than this.
pub const PROCESS_RECORD_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// What a process does on the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ProcessKind {
    /// A worker (with or without partitions).
    Worker,
    /// `taskhub serve`: the HTTP API and dashboard without a worker.
    Serve,
    /// A Durable Task gRPC endpoint.
    Grpc,
    /// An HTTP API endpoint beside a worker.
    Http,
}

impl ProcessKind {
    /// Every kind.
    pub const ALL: [Self; 4] = [Self::Worker, Self::Serve, Self::Grpc, Self::Http];

    /// The stored name (`worker`, `serve`, `grpc`, `http`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Serve => "serve",
            Self::Grpc => "grpc",
            Self::Http => "http",
        }
    }

    /// The kind of a stored name.
    ///
    /// # Errors
    /// `Corrupt` naming the value when it is no kind's name.
    pub fn parse(name: &str) -> StorageResult<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| StorageError::Corrupt {
                what: "process record".into(),
                detail: format!("unknown process kind {name:?}"),
            })
    }
}

impl fmt::Display for ProcessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a process says about itself when it announces (see [`ProcessStore::announce_process`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessAnnouncement {
    /// Unique per process and role (a worker and the gRPC endpoint of one process are two).
    pub id: String,
    /// What it does.
    pub kind: ProcessKind,
    /// The machine it runs on.
    pub host: String,
    /// Its operating-system process ID.
    pub pid: u32,
    /// The build's version (the crate version of the binary).
    pub build_version: String,
}

/// One process as the hub knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    /// Its ID.
    pub id: String,
    /// What it does.
    pub kind: ProcessKind,
    /// The machine it runs on.
    pub host: String,
    /// Its operating-system process ID.
    pub pid: u32,
    /// The schema (or layout) version its build writes.
    pub schema_version: u32,
    /// The build's version.
    pub build_version: String,
    /// When it announced itself, by the clock of the store it announced through.
    pub started_at: Timestamp,
    /// Its last heartbeat, by the same clock.
    pub heartbeat_at: Timestamp,
}

impl ProcessRecord {
    /// True when its heartbeat is within [`PROCESS_LIVENESS_WINDOW`] of `now`.
    #[must_use]
    pub fn is_live(&self, now: Timestamp) -> bool {
        now.saturating_since(self.heartbeat_at) < PROCESS_LIVENESS_WINDOW
    }

    /// True when its heartbeat is at least `age` older than `now`.
    #[must_use]
    pub fn is_older_than(&self, age: Duration, now: Timestamp) -> bool {
        now.saturating_since(self.heartbeat_at) >= age
    }
}

impl fmt::Display for ProcessRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} on {} (pid {}, schema {}, build {})",
            self.kind, self.id, self.host, self.pid, self.schema_version, self.build_version
        )
    }
}

/// Refuses a migration of `what` to schema `target` while a process of an older build is
/// alive (its heartbeat within [`PROCESS_LIVENESS_WINDOW`] of `now`): such a process would not
/// notice the new schema. The error names every such process.
///
/// # Errors
/// `OlderProcesses` naming them.
pub fn refuse_older_processes(
    what: &str,
    target: u32,
    records: &[ProcessRecord],
    now: Timestamp,
) -> StorageResult<()> {
    let older: Vec<String> = records
        .iter()
        .filter(|r| r.schema_version < target && r.is_live(now))
        .map(ToString::to_string)
        .collect();
    if older.is_empty() {
        return Ok(());
    }
    Err(StorageError::OlderProcesses {
        what: what.to_owned(),
        target,
        processes: older,
    })
}

/// The process registry of a hub.
///
/// Contract:
/// * `announce_process` MUST store the record (replacing one of the same ID) with
///   [`schema_supported`](Self::schema_supported) as its schema version and the store's
///   current time as both `started_at` and `heartbeat_at`, and return it.
/// * `heartbeat_process` MUST set the record's `heartbeat_at` to the store's current time,
///   keep its other fields and return it; it MUST fail with `NotFound` if there is no record
///   of that ID (it was forgotten). It MUST fail with `NewerSchema` when the hub's stored
///   schema is newer than this build's (a newer build migrated it).
/// * `list_processes` MUST return every record, ordered by ID.
/// * `forget_process` MUST remove the record and report whether it existed.
/// * `stored_schema` MUST return the version stored in the hub now; on a hub this build
///   created or migrated, [`schema_supported`](Self::schema_supported).
/// * `clear_hub` leaves the records as they are (the processes carry on).
#[async_trait]
pub trait ProcessStore: Send + Sync {
    /// The schema (or layout) version this build of the backend writes, and the newest it
    /// reads.
    fn schema_supported(&self) -> u32;

    /// Stores the record of a process; returns it as stored.
    async fn announce_process(&self, process: &ProcessAnnouncement)
        -> StorageResult<ProcessRecord>;

    /// Renews a process's heartbeat; returns the record.
    async fn heartbeat_process(&self, id: &str) -> StorageResult<ProcessRecord>;

    /// Every record, ordered by ID.
    async fn list_processes(&self) -> StorageResult<Vec<ProcessRecord>>;

    /// Removes a record; true if it existed.
    async fn forget_process(&self, id: &str) -> StorageResult<bool>;

    /// The schema version the hub is at now, as stored (a newer build may have migrated it
    /// since this store was opened).
    async fn stored_schema(&self) -> StorageResult<u32>;
}

/// Fails with `NewerSchema` when the hub's stored schema is newer than `store`'s build: a
/// newer build migrated it under this process.
///
/// # Errors
/// `NewerSchema`, or the error of reading the version.
pub async fn check_schema<S: ProcessStore + ?Sized>(store: &S, what: &str) -> StorageResult<()> {
    let found = store.stored_schema().await?;
    let supported = store.schema_supported();
    if found > supported {
        return Err(StorageError::NewerSchema {
            what: what.to_owned(),
            found,
            supported,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn record(id: &str, schema_version: u32, heartbeat_at: u64) -> ProcessRecord {
        ProcessRecord {
            id: id.into(),
            kind: ProcessKind::Worker,
            host: "h".into(),
            pid: 7,
            schema_version,
            build_version: "0.1.0".into(),
            started_at: Timestamp::from_millis(0),
            heartbeat_at: Timestamp::from_millis(heartbeat_at),
        }
    }

    #[test]
    fn only_live_processes_of_older_builds_refuse_a_migration() {
        let now = Timestamp::from_millis(100_000);
        let records = [
            record("old-live", 6, 90_000),
            record("old-stale", 6, 30_000),
            record("same", 7, 99_000),
        ];
        let err = refuse_older_processes("hub", 7, &records, now).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("old-live") && text.contains("schema 6"),
            "{text}"
        );
        assert!(
            !text.contains("old-stale") && !text.contains("same"),
            "{text}"
        );
        assert!(!err.is_retryable());
        refuse_older_processes("hub", 7, &records[1..], now).unwrap();
    }

    #[test]
    fn kinds_round_trip_and_unknown_ones_are_named() {
        for kind in ProcessKind::ALL {
            assert_eq!(ProcessKind::parse(kind.as_str()).unwrap(), kind);
        }
        let err = ProcessKind::parse("daemon").unwrap_err().to_string();
        assert!(err.contains("daemon"), "{err}");
    }
}
