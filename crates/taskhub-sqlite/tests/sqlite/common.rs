//! Helpers shared by the integration tests: temporary directories, clocks, sample rows.
#![allow(clippy::disallowed_methods, reason = "test code")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use taskhub_core::{ExecutionId, InstanceId, OrchestrationStatus, Timestamp};
use taskhub_sqlite::{SqliteOptions, SqliteStore};
use taskhub_storage::{InstanceRow, ManualClock};

/// A directory removed (with everything in it) on drop.
pub struct TestDir(PathBuf);

impl TestDir {
    /// A fresh, empty directory.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "taskhub-sqlite-test-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// A path inside the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A manual clock at a round time.
pub fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_millis(1_700_000_000_000))
}

/// Opens `path` with a manual clock.
pub fn open(path: &Path, clock: &ManualClock) -> SqliteStore {
    SqliteStore::open(SqliteOptions::new(path).with_clock(Arc::new(clock.clone()))).unwrap()
}

/// An instance ID.
pub fn iid(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

/// A plain instance row.
pub fn row(id: &str, name: &str, status: OrchestrationStatus, created_ms: u64) -> InstanceRow {
    let at = Timestamp::from_millis(created_ms);
    InstanceRow {
        status,
        ..InstanceRow::new(iid(id), name, ExecutionId::new("e1").unwrap(), at)
    }
}

/// A simple event.
pub fn event(ms: u64) -> taskhub_core::HistoryEvent {
    taskhub_core::HistoryEvent::new(
        Timestamp::from_millis(ms),
        taskhub_core::EventKind::OrchestratorStarted,
    )
}

/// A message with no delay.
pub fn msg(body: &str) -> taskhub_storage::NewQueueMessage {
    taskhub_storage::NewQueueMessage {
        body: body.into(),
        delay: std::time::Duration::ZERO,
    }
}

/// A checkpoint that creates the history of `id` with one event and sends `outbound`.
pub fn first_checkpoint(id: &str) -> taskhub_storage::CheckpointRequest {
    taskhub_storage::CheckpointRequest {
        instance_id: iid(id),
        fence: None,
        history: Some(taskhub_storage::HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: vec![event(1)],
        }),
        instance: Some((
            row(id, "Orch", OrchestrationStatus::Running, 1),
            taskhub_storage::Expect::Absent,
        )),
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// A checkpoint that appends `events` to the history `loaded` was read as (its execution,
/// under its ETag), and writes nothing else.
pub fn append_checkpoint(
    id: &str,
    loaded: &taskhub_storage::HistorySnapshot,
    events: Vec<taskhub_core::HistoryEvent>,
) -> taskhub_storage::CheckpointRequest {
    taskhub_storage::CheckpointRequest {
        instance_id: iid(id),
        fence: None,
        history: Some(taskhub_storage::HistoryWrite {
            execution_id: loaded.execution_id.clone(),
            expected: Some(loaded.etag.clone()),
            new_execution: false,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// Appends `events` to the history `loaded` was read as, with one [`append_checkpoint`] that
/// must succeed.
pub async fn append_events(
    store: &SqliteStore,
    id: &str,
    loaded: &taskhub_storage::HistorySnapshot,
    events: Vec<taskhub_core::HistoryEvent>,
) {
    use taskhub_storage::CheckpointStore as _;
    store
        .checkpoint(append_checkpoint(id, loaded, events))
        .await
        .unwrap();
}

/// A [`first_checkpoint`] of `id` fenced by epoch 0 of `partition`, sending one work item
/// `body`.
pub fn fenced_first_checkpoint(
    id: &str,
    partition: u32,
    body: &str,
) -> taskhub_storage::CheckpointRequest {
    taskhub_storage::CheckpointRequest {
        fence: Some(taskhub_storage::LeaseFence {
            partition,
            epoch: 0,
        }),
        outbound: vec![taskhub_storage::OutboundMessage {
            claim: None,
            queue: taskhub_storage::QueueName::WorkItems,
            message: msg(body),
        }],
        ..first_checkpoint(id)
    }
}

/// SQLite's write lock on a file, taken by another connection and held until released: a
/// test decides when it ends (after the state it needs), not a timer.
pub struct WriteLock(rusqlite::Connection);

impl WriteLock {
    /// Takes the write lock on `path` (`BEGIN IMMEDIATE` on a new connection).
    pub fn take(path: &Path) -> Self {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        Self(conn)
    }

    /// Releases the lock now.
    pub fn release(self) {
        self.0.execute_batch("COMMIT").unwrap();
    }

    /// Releases the lock on another thread once `ready` holds (checked every millisecond),
    /// or after a minute if it never does, so that a broken test fails instead of hanging.
    /// The returned flag is set just before the lock goes: a write that finished while it
    /// was still unset did not wait for the lock.
    pub fn release_when(
        self,
        ready: impl Fn() -> bool + Send + 'static,
    ) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
        let released = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&released);
        let thread = std::thread::spawn(move || {
            let stuck = std::time::Instant::now() + Duration::from_secs(60);
            while !ready() && std::time::Instant::now() < stuck {
                std::thread::sleep(Duration::from_millis(1));
            }
            flag.store(true, Ordering::SeqCst);
            self.release();
        });
        (released, thread)
    }
}
