//! Wake-ups across processes on PostgreSQL (`LISTEN/NOTIFY`): a start and a raised event
//! written through one store (another process: its own pool and its own listening connection)
//! wake the idle pollers of a worker on a second store at once.
//!
//! The worker's clock is a `ManualClock` that is never advanced, so its idle pollers' back-off
//! sleeps never end once they are parked: without a notification nothing is ever picked up
//! (the second test checks exactly that, with `postgres.notify = false`). Run with
//! `scripts/with-postgres.sh cargo test -p taskhub --test delivery postgres_wakeup::`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backends::{backend_config, unique_hub_name, Backend};
use crate::common::registries::double_then_wait_registry;
use crate::common::*;
use taskhub::*;
use taskhub_backends::OptionValue;
use taskhub_storage::{ManualClock, TaskHubStore};

/// A store on the hub `name`, with or without notifications.
async fn store(name: &str, notify: bool) -> Arc<dyn TaskHubStore> {
    let mut config = backend_config(Backend::Postgres, std::path::Path::new("."), name);
    config.overrides.push(OptionValue::new(
        "postgres.notify",
        notify.to_string(),
        "the test",
    ));
    taskhub_backends::create_store("postgres", &config)
        .await
        .unwrap()
        .store
}

/// A worker on its own store whose clock never moves, parked; a client on another store.
async fn setup(worker_notify: bool) -> (WorkerHandle, TaskHubClient, TaskHub) {
    let name = unique_hub_name();
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let settings = Settings {
        max_queue_polling_interval: Duration::from_secs(3600),
        partition_count: 1,
        ..fast_settings()
    };
    let worker_hub =
        TaskHub::open_with_clock(store(&name, worker_notify).await, settings.clone(), clock)
            .await
            .unwrap();
    let worker = Worker::start(&worker_hub, double_then_wait_registry())
        .await
        .unwrap();
    let client_hub = TaskHub::open(store(&name, true).await, settings)
        .await
        .unwrap();
    // The worker's first polls find nothing; then its pollers sleep on the clock that never
    // moves. A real second is far more than those polls take.
    tokio::time::sleep(Duration::from_secs(1)).await;
    (worker, client_hub.client(), client_hub)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_and_an_event_from_another_process_wake_idle_pollers_at_once() {
    let (worker, client, _hub) = setup(true).await;
    let started = Instant::now();
    let id = client.start("DoubleThenWait", 20u64).await.unwrap();
    wait::until(
        "the start and the activity result to be picked up without a poll",
        || worker.stats().turns >= 2,
        || worker.stats(),
    )
    .await;
    let first = started.elapsed();
    client.raise_event(&id, "extra", &2u64).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    eprintln!(
        "start to waiting: {first:?}; start to completion: {:?}",
        started.elapsed()
    );
    worker.shutdown().await;
}

/// The control: with notifications off on the worker's store, the same start is never picked
/// up (its pollers sleep on a clock that never moves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_notifications_the_parked_worker_never_sees_the_start() {
    let (worker, client, _hub) = setup(false).await;
    client.start("DoubleThenWait", 20u64).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().turns, 0, "{:?}", worker.stats());
    worker.shutdown().await;
}
