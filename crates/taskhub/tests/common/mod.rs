//! Shared helpers for runtime tests.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    unused_imports,
    missing_docs,
    clippy::unwrap_used,
    reason = "test support: not every test binary uses every helper"
)]

pub mod activity_probe;
pub mod child;
pub mod history;
pub mod queues;
pub mod registries;
pub mod remote;
pub mod run;
pub mod skewed_clock;
pub mod stores;
pub mod tallies;
pub mod two_stores;

use std::sync::Arc;
use std::time::Duration;

pub use run::{completes_within, run_each, run_to_end, start_as, wait_done};
use taskhub::*;
use taskhub_storage::{SystemClock, TaskHubStore};
pub use taskhub_test_support::{wait, TempDir};

pub fn fast_settings() -> Settings {
    Settings {
        max_queue_polling_interval: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    }
}

pub fn sqlite_store(dir: &std::path::Path) -> Arc<dyn TaskHubStore> {
    let opts = taskhub_sqlite::SqliteOptions::new(dir.join("hub.db"))
        .with_clock(Arc::new(SystemClock::new()));
    Arc::new(taskhub_sqlite::SqliteStore::open(opts).unwrap())
}

/// A hub on a SQLite file (`hub.db`) in a fresh directory named after `name`; the directory
/// lives as long as the returned `TempDir`.
pub async fn sqlite_hub(name: &str, settings: Settings) -> (TempDir, TaskHub) {
    let dir = TempDir::new(name);
    let hub = TaskHub::open(sqlite_store(&dir.0), settings).await.unwrap();
    (dir, hub)
}

/// Under paused tokio time: waits until `f` holds; `bound` (tokio time) runs out only once the
/// runtime has been idle without `f` holding.
pub async fn until_paused(what: &str, bound: Duration, mut f: impl FnMut() -> bool) {
    tokio::time::timeout(bound, async {
        while !f() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// Under paused tokio time: moves `clock` on by `step` every 10 ms until `id` has completed;
/// gives up after 30 s of tokio time.
pub async fn advance_until_completed(
    client: &TaskHubClient,
    id: &InstanceId,
    clock: &taskhub_storage::ManualClock,
    step: Duration,
    what: &str,
) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while status_of(client, id).await != OrchestrationStatus::Completed {
            clock.advance(step);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// The status (without history) of the instance `id`, if it exists.
pub async fn find(client: &TaskHubClient, id: &InstanceId) -> Option<InstanceStatus> {
    client
        .get_status(id, StatusOptions::default())
        .await
        .unwrap()
}

/// The status of an instance that exists.
pub async fn status_of(client: &TaskHubClient, id: &InstanceId) -> OrchestrationStatus {
    row_of(client, id).await.status
}

/// The row of an instance that exists.
pub async fn row_of(client: &TaskHubClient, id: &InstanceId) -> InstanceRow {
    find(client, id).await.unwrap().row
}

/// Whether the instance `id` exists.
pub async fn exists(client: &TaskHubClient, id: &InstanceId) -> bool {
    find(client, id).await.is_some()
}

/// Asserts that `letter` was dead-lettered at its third delivery, past a `max_dequeue_count`
/// of 2, and that its reason says so.
pub fn assert_dead_at_third_delivery(letter: &taskhub_storage::DeadLetter) {
    assert_eq!(letter.dequeue_count, 3);
    assert!(
        letter.reason.contains("delivered 3 times")
            && letter.reason.contains("max_dequeue_count is 2"),
        "{}",
        letter.reason
    );
}

/// Long enough that only a stuck run reaches it.
pub const STUCK: Duration = Duration::from_secs(60);

/// A SQLite hub on a manual clock, for tests that break the stored hub under a running worker:
/// every turn loads the history (no extended sessions), and a message is dead-lettered after
/// two failed deliveries.
pub struct ManualSqliteHub {
    /// Holds the database file.
    pub dir: TempDir,
    /// The database file.
    pub path: std::path::PathBuf,
    pub clock: Arc<taskhub_storage::ManualClock>,
    pub store: Arc<taskhub_sqlite::SqliteStore>,
    pub hub: TaskHub,
}

/// Opens a [`ManualSqliteHub`] in a fresh directory named after `name`.
pub async fn manual_sqlite_hub(name: &str) -> ManualSqliteHub {
    let dir = TempDir::new(name);
    let path = dir.0.join("hub.db");
    let clock = Arc::new(taskhub_storage::ManualClock::new(Timestamp::from_millis(
        1_700_000_000_000,
    )));
    let store = Arc::new(
        taskhub_sqlite::SqliteStore::open(
            taskhub_sqlite::SqliteOptions::new(&path).with_clock(clock.clone()),
        )
        .unwrap(),
    );
    let settings = Settings {
        max_dequeue_count: 2,
        extended_sessions_enabled: false,
        ..fast_settings()
    };
    let hub = TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    ManualSqliteHub {
        dir,
        path,
        clock,
        store,
        hub,
    }
}

/// An orchestration `Wait` that returns the `go` event's number.
pub fn wait_for_go_registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Wait", |ctx: OrchestrationContext, _: ()| async move {
        let v: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    reg
}

/// Moves `clock` on by half a second every 20 ms of real time until aborted, so that delayed
/// redeliveries and heartbeats come due.
pub fn keep_advancing(clock: Arc<taskhub_storage::ManualClock>) -> tokio::task::JoinHandle<()> {
    keep_advancing_by(
        &clock,
        Duration::from_millis(20),
        Duration::from_millis(500),
    )
}

/// Moves `clock` (and its clones) on by `step` every `every` (tokio time) until aborted.
pub fn keep_advancing_by(
    clock: &taskhub_storage::ManualClock,
    every: Duration,
    step: Duration,
) -> tokio::task::JoinHandle<()> {
    let clock = clock.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            clock.advance(step);
        }
    })
}
