//! The seeds' race handling, driven on purpose on an Azure hub (Azurite):
//!
//! * a message that arrives before the history it depends on exists (an event sent to an
//!   instance whose start has not arrived: Azure queues do not keep order) goes back with a
//!   delay, is not lost and is not counted as a failed delivery (`max_dequeue_count` is 2
//!   here; the event is delivered far more often before the start comes);
//! * `ExecutionStarted` de-dup: a start delivered twice, and again after the execution
//!   finished, runs one execution (its activity once, one `ExecutionStarted` in history).
//!
//! Run with `scripts/with-azurite.sh cargo test -p taskhub --test azure races::`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backends;
use crate::common::history::with_history;
use crate::common::registries::add_call;
use crate::common::wait::{until, until_async};
use crate::common::{start_as, wait_done};
use taskhub::*;
use taskhub_storage::{NewQueueMessage, QueueName, QueueStore};

const BOUND: Duration = Duration::from_secs(120);

fn settings() -> Settings {
    Settings {
        max_dequeue_count: 2,
        ..backends::settings(backends::Backend::Azure)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_overtakes_its_instances_start_waits_uncounted_and_is_applied() {
    let store = backends::azure_store(&backends::unique_hub_name()).await;
    let hub = TaskHub::open(store, settings()).await.unwrap();
    let mut reg = Registry::new();
    reg.orchestration(
        "Sender",
        |ctx: OrchestrationContext, target: String| async move {
            let target =
                InstanceId::new(&target).map_err(|e| OrchestrationError::new(e.to_string()))?;
            ctx.raise_event(&target, "ping", &7u64)?;
            Ok::<_, OrchestrationError>(())
        },
    );
    reg.orchestration("Target", |ctx: OrchestrationContext, (): ()| async move {
        let v: u64 = ctx.wait_for_event("ping").await?;
        Ok::<_, OrchestrationError>(v)
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let target = InstanceId::new("race-target").unwrap();
    let sender = client.start("Sender", target.to_string()).await.unwrap();
    let sent = wait_done(&client, &sender, BOUND).await;
    assert_eq!(sent.status(), OrchestrationStatus::Completed);

    // The event for the target arrives with no history and no row: each delivery is put
    // back. Wait until it has been delivered (and not applied) more often than
    // max_dequeue_count allows failed deliveries, or until it was dead-lettered (the bug).
    let c = client.clone();
    let w = &worker;
    until_async(
        "the early event delivered 4 times, or dead-lettered",
        || {
            let c = c.clone();
            async move {
                w.stats().discarded >= 4 || !c.list_dead_letters(None, 10).await.unwrap().is_empty()
            }
        },
        || {
            let c = c.clone();
            async move { (w.stats(), c.list_dead_letters(None, 10).await) }
        },
    )
    .await;
    let dead = client.list_dead_letters(None, 10).await.unwrap();
    assert!(
        dead.is_empty(),
        "a message waiting for its instance's start was counted as failed and dead-lettered: {dead:?}"
    );

    // The start comes at last: the waiting event is applied.
    start_as(&client, "Target", &target, ()).await;
    let done = wait_done(&client, &target, BOUND).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(7));
    assert!(client.list_dead_letters(None, 10).await.unwrap().is_empty());
    worker.shutdown().await;
}

/// Counts an activity's runs.
fn once_registry(runs: Arc<AtomicUsize>) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", move |_ctx: ActivityContext, x: u64| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ActivityError>(x * 2)
        }
    });
    add_call(&mut reg, "Once", "Double");
    reg
}

fn starts_in(events: &[HistoryEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_delivered_twice_and_after_it_finished_runs_one_execution() {
    let store = backends::azure_store(&backends::unique_hub_name()).await;
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let client = hub.client();
    let id = client.start("Once", 21u64).await.unwrap();

    // No worker yet: take the start message off its control queue and put two copies back
    // (same body, same message ID), as a redelivery or a re-sent outbox would.
    let queue = QueueName::Control(id.partition(hub.partition_count()));
    let taken = store
        .dequeue(queue, 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(taken.len(), 1, "the start message: {taken:?}");
    let body = taken[0].body.clone();
    let copy = || NewQueueMessage {
        body: body.clone(),
        delay: Duration::ZERO,
    };
    store.enqueue(queue, vec![copy(), copy()]).await.unwrap();
    store.delete(queue, &taken[0].receipt).await.unwrap();

    let runs = Arc::new(AtomicUsize::new(0));
    let worker = Worker::start(&hub, once_registry(runs.clone()))
        .await
        .unwrap();
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    // The second copy may come after completion: wait until it was judged.
    until(
        "the duplicate start discarded",
        || worker.stats().discarded >= 1,
        || worker.stats(),
    )
    .await;

    // Once more, after the execution finished.
    let before = worker.stats().discarded;
    store.enqueue(queue, vec![copy()]).await.unwrap();
    until(
        "the late start discarded",
        || worker.stats().discarded > before,
        || worker.stats(),
    )
    .await;
    until_async(
        "the control queue empty",
        || {
            let store = store.clone();
            async move { store.stats(queue).await.unwrap().length == 0 }
        },
        || {
            let store = store.clone();
            async move { store.stats(queue).await }
        },
    )
    .await;

    let status = with_history(&client, &id).await;
    assert_eq!(status.status(), OrchestrationStatus::Completed);
    assert_eq!(
        status.row.execution_id, done.row.execution_id,
        "one execution"
    );
    assert_eq!(
        starts_in(&status.history.unwrap()),
        1,
        "one ExecutionStarted"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the activity ran once");
    assert!(client.list_dead_letters(None, 10).await.unwrap().is_empty());
    worker.shutdown().await;
}
