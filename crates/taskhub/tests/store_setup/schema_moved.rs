//! A worker that finds the hub migrated by a newer build under it (the history tables of its
//! schema gone, the stored version past its own) stops taking work with one clear error:
//! the messages it could not process go back uncounted, none is dead-lettered, and its
//! record in the process registry carries its schema version.

use std::time::Duration;

use crate::common::*;
use taskhub::*;
use taskhub_storage::{Clock as _, ProcessStore, QueueName, QueueStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_under_a_newer_schema_halts_without_dead_letters() {
    // Every turn loads the history, so what is broken below is met.
    let ManualSqliteHub {
        dir: _dir,
        path,
        clock,
        store,
        hub,
    } = manual_sqlite_hub("schema-moved").await;
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    let me = worker.process().unwrap().clone();
    assert_eq!(me.kind, ProcessKind::Worker);
    assert_eq!(me.schema_version, taskhub_sqlite::schema::latest_version());
    assert_eq!(store.list_processes().await.unwrap(), vec![me.clone()]);
    let client = hub.client();
    let id = client.start("Wait", ()).await.unwrap();
    wait::until(
        "the first turn",
        || worker.stats().turns == 1,
        || worker.stats(),
    )
    .await;

    taskhub_sqlite::testing::simulate_newer_migration(&path).unwrap();
    client.raise_event(&id, "go", &1u64).await.unwrap();
    // Failed deliveries would come back after a second each, and the heartbeat is due after
    // ten: move time on, well past what dead-lettering would take.
    let advancing = keep_advancing(clock.clone());
    wait::until("the halt", || worker.halted().is_some(), || worker.stats()).await;
    let why = worker.halted().unwrap();
    assert!(why.contains("written by a newer build"), "{why}");
    // A minute more on the hub's clock: several more deliveries (a second apart), had the
    // worker kept taking work.
    let halted_at = clock.monotonic();
    wait::until(
        "a minute more on the clock",
        || clock.monotonic() >= halted_at + Duration::from_secs(60),
        || worker.stats(),
    )
    .await;
    advancing.abort();

    assert_eq!(worker.stats().dead_lettered, 0, "{:?}", worker.stats());
    assert!(client.list_dead_letters(None, 10).await.unwrap().is_empty());
    let queue = QueueName::Control(id.partition(hub.partition_count()));
    assert_eq!(
        store.stats(queue).await.unwrap().length,
        1,
        "the event is kept"
    );
    clock.advance(Duration::from_secs(600));
    let again = store
        .dequeue(queue, 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(
        again[0].dequeue_count, 1,
        "the halted worker's deliveries were not counted"
    );
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_down_worker_forgets_its_process_record() {
    let dir = TempDir::new("process-record");
    let store = sqlite_store(&dir.0);
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, wait_for_go_registry()).await.unwrap();
    let id = worker.process().unwrap().id.clone();
    let listed = store.list_processes().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    worker.shutdown().await;
    assert!(store.list_processes().await.unwrap().is_empty());
}
