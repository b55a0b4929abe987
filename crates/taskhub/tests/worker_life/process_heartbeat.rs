//! The process heartbeat runs on the hub's clock: each `process_heartbeat_interval` renews the
//! record (re-announcing it if it was forgotten), and the beat after a newer build's migration
//! reports `NewerSchema` through `Announced::schema_moved`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::backends::{settings, Backend, TestStore};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{MemoryStore, MEMORY_SCHEMA_VERSION};
use taskhub_storage::{ManualClock, ProcessAnnouncement, ProcessStore, StorageError};

taskhub_test_support::backend_matrix!(
    [postgres]
    process_records_are_judged_by_the_clock_that_wrote_them,
);

/// On a store that owns time (PostgreSQL: heartbeats are the server's `now`), a caller whose
/// clock runs two hours ahead still sees a fresh record as live, and forgetting the "stale"
/// ones leaves it.
async fn process_records_are_judged_by_the_clock_that_wrote_them(backend: Backend) {
    let store = TestStore::fresh(backend, "registry-clock").await;
    let ahead = SystemTime::now() + Duration::from_secs(2 * 3600);
    let clock = Arc::new(ManualClock::new(Timestamp::from_system_time(ahead)));
    let hub = TaskHub::open_with_clock(store.store.clone(), settings(backend), clock)
        .await
        .unwrap();
    store
        .store
        .announce_process(&ProcessAnnouncement {
            id: "fresh".into(),
            kind: ProcessKind::Serve,
            host: "box".into(),
            pid: 1,
            build_version: "0.1.0".into(),
        })
        .await
        .unwrap();
    let registry = hub.processes().await.unwrap();
    assert_eq!(registry.records.len(), 1, "{registry:?}");
    assert!(
        registry.records.iter().all(|r| r.is_live(registry.now)),
        "{registry:?}"
    );
    let gone = hub
        .forget_processes_older_than(taskhub_storage::PROCESS_LIVENESS_WINDOW)
        .await
        .unwrap();
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(hub.processes().await.unwrap().records.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heartbeat_renews_on_the_clock_and_reports_a_newer_schema() {
    let start = Timestamp::from_millis(1_700_000_000_000);
    let clock = Arc::new(ManualClock::new(start));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let settings = Settings {
        process_heartbeat_interval: Duration::from_secs(5),
        ..fast_settings()
    };
    let hub = TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    let serve = hub.announce(ProcessKind::Serve).await.unwrap();
    let id = serve.record().id.clone();
    assert_eq!(serve.record().heartbeat_at, start);
    let beat_at = |at: Timestamp| {
        let store = store.clone();
        let id = id.clone();
        async move {
            store
                .list_processes()
                .await
                .unwrap()
                .iter()
                .any(|r| r.id == id && r.heartbeat_at == at)
        }
    };

    // Nothing before the interval has passed on the clock: the heartbeat is parked until
    // the interval's end, and the record is as announced.
    clock.advance(Duration::from_secs(4));
    wait::until(
        "the heartbeat parked until the interval's end",
        || clock.has_sleeper_until(Duration::from_secs(5)),
        || (),
    )
    .await;
    assert!(beat_at(start).await, "no beat before the interval");
    clock.advance(Duration::from_secs(1));
    let five = start.saturating_add(Duration::from_secs(5));
    wait::until_async("the first beat", || beat_at(five), || async {}).await;

    // A forgotten record is announced again at the next beat.
    assert!(store.forget_process(&id).await.unwrap());
    clock.advance(Duration::from_secs(5));
    let ten = start.saturating_add(Duration::from_secs(10));
    wait::until_async("the re-announcement", || beat_at(ten), || async {}).await;

    // A newer build migrates the hub: the next beat says so.
    store.set_stored_schema(MEMORY_SCHEMA_VERSION + 1);
    assert!(serve.moved().is_none());
    clock.advance(Duration::from_secs(5));
    let moved = tokio::time::timeout(Duration::from_secs(30), serve.schema_moved())
        .await
        .expect("the beat reports the move");
    assert!(
        matches!(moved, StorageError::NewerSchema { .. }),
        "{moved:?}"
    );
    assert!(serve.moved().is_some());

    serve.retire().await;
    assert!(store.list_processes().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_heartbeat_interval_past_a_third_of_the_liveness_window_is_refused() {
    let settings = Settings {
        process_heartbeat_interval: Duration::from_secs(21),
        ..Settings::default()
    };
    let err = settings.validate().unwrap_err().to_string();
    assert!(err.contains("process_heartbeat_interval"), "{err}");
}
