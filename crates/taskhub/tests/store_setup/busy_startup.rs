//! `TaskHub::open` and `Worker::start` on a store that answers busy: retried with back-off
//! through the clock for `startup_busy_timeout`, then a clear error saying the store stayed
//! busy and for how long (memory backend fault injection, `ManualClock`).

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
use taskhub_storage::{Clock, ManualClock, StorageError};

fn busy() -> StorageError {
    StorageError::Busy { retry_after: None }
}

fn busy_times(op: Op, n: u64) -> FaultPlan {
    (1..=n).fold(FaultPlan::none(), |plan, k| {
        plan.fail(Trigger::nth_of(op, k), busy())
    })
}

fn setup(plan: FaultPlan) -> (ManualClock, Arc<MemoryStore>, Settings) {
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let store = Arc::new(MemoryStore::with_faults(Arc::new(clock.clone()), plan));
    let settings = Settings {
        startup_busy_timeout: Duration::from_secs(60),
        ..Settings::default()
    };
    (clock, store, settings)
}

/// Runs `task` to completion, moving the manual clock forward whenever it waits.
async fn drive<T: Send + 'static>(clock: &ManualClock, task: tokio::task::JoinHandle<T>) -> T {
    while !task.is_finished() {
        tokio::task::yield_now().await;
        clock.advance(Duration::from_millis(10));
    }
    task.await.unwrap()
}

async fn open(
    clock: &ManualClock,
    store: &Arc<MemoryStore>,
    settings: &Settings,
) -> Result<TaskHub, TaskhubError> {
    let (store, settings, c) = (store.clone(), settings.clone(), clock.clone());
    let task =
        tokio::spawn(async move { TaskHub::open_with_clock(store, settings, Arc::new(c)).await });
    drive(clock, task).await
}

fn assert_stayed_busy(err: &TaskhubError, what: &str) {
    let TaskhubError::StoreBusy {
        waited, attempts, ..
    } = err
    else {
        panic!("expected StoreBusy, got {err:?}");
    };
    assert!(
        *waited >= Duration::from_secs(60) && *waited < Duration::from_secs(63),
        "{waited:?}"
    );
    assert!(*attempts > 5, "backs off but keeps trying: {attempts}");
    let text = err.to_string();
    assert!(
        text.contains("stayed busy for 60") && text.contains(what) && text.contains("busy"),
        "{text}"
    );
}

#[tokio::test]
async fn open_retries_a_busy_store_until_it_answers() {
    let (clock, store, settings) = setup(busy_times(Op::CreateHub, 5));
    let hub = open(&clock, &store, &settings).await.unwrap();
    assert_eq!(hub.partition_count(), 4);
    assert_eq!(store.faults().calls(Op::CreateHub), 6);
    assert!(
        clock.monotonic() < Duration::from_secs(5),
        "{:?}",
        clock.monotonic()
    );
}

#[tokio::test]
async fn open_on_a_store_busy_for_good_fails_clearly_after_the_bound() {
    let (clock, store, settings) = setup(FaultPlan::none().random(7, 1.0, busy()));
    let err = open(&clock, &store, &settings).await.unwrap_err();
    assert_stayed_busy(&err, "opening the task hub");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn open_does_not_retry_an_error_that_is_not_retryable() {
    let plan = FaultPlan::none().fail(
        Trigger::nth_of(Op::CreateHub, 1),
        StorageError::InvalidArgument("injected".into()),
    );
    let (clock, store, settings) = setup(plan);
    let err = open(&clock, &store, &settings).await.unwrap_err();
    assert!(
        matches!(err, TaskhubError::Storage(StorageError::InvalidArgument(_))),
        "{err:?}"
    );
    assert_eq!(store.faults().calls(Op::CreateHub), 1);
}

#[tokio::test]
async fn worker_start_retries_a_busy_store_then_fails_clearly() {
    let (clock, store, settings) = setup(FaultPlan::none());
    let hub = open(&clock, &store, &settings).await.unwrap();

    store.faults().set_plan(busy_times(Op::ListPartitions, 4));
    let h = hub.clone();
    let worker = drive(
        &clock,
        tokio::spawn(async move { Worker::start(&h, Registry::new()).await }),
    )
    .await
    .unwrap();
    assert!(store.faults().calls(Op::ListPartitions) >= 5);
    worker.shutdown().await;

    store
        .faults()
        .set_plan(FaultPlan::none().random(3, 1.0, busy()));
    let h = hub.clone();
    let started = drive(
        &clock,
        tokio::spawn(async move { Worker::start(&h, Registry::new()).await }),
    )
    .await;
    let Err(err) = started else {
        panic!("a store busy for good must fail the start");
    };
    assert_stayed_busy(&err, "starting a worker");
}
