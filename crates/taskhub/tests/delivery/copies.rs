//! Copies of one work item (one message ID) never both run in one worker (issue 20, item 12).
//!
//! In a kill -9 run on Azurite, a torn checkpoint's outbox was re-sent after its writer had
//! sent it, so two copies of one work item sat in the work-item queue, and one process ran the
//! activity twice, 44 ms apart. Here the copies are put straight into the queue of a hub with
//! a worker (memory backend): while the activity runs, and again after its result is recorded.
//! The activity must run once, the copies be deleted, and the orchestration complete.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_core::format::encode_message;
use taskhub_core::{Message, Sender};
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{HistoryStore, NewQueueMessage, QueueName, QueueStore, SystemClock};
use tokio::sync::Semaphore;

/// The work item of the orchestration's activity (task 0), as its turn sent it: the same
/// message ID, rebuilt from the history.
async fn work_item(store: &MemoryStore, id: &InstanceId, partition: u32) -> String {
    let h = store.load_history(id).await.unwrap().unwrap();
    let scheduled = h
        .events
        .iter()
        .find(|e| matches!(e.event, EventKind::TaskScheduled { task_id: 0, .. }))
        .expect("the activity is scheduled")
        .event
        .clone();
    let message = Message {
        id: MessageId::derived(id, &h.execution_id, "task:0"),
        target: id.clone(),
        execution_id: Some(h.execution_id.clone()),
        sender: Some(Sender {
            instance_id: id.clone(),
            execution_id: h.execution_id.clone(),
        }),
        episode: 1,
        enqueued_at: Timestamp::from_millis(0),
        target_partition: Some(partition),
        traceparent: None,
        order: None,
        event: scheduled,
    };
    encode_message(&message)
}

async fn put_copies(store: &MemoryStore, body: &str, n: usize) {
    let copies = (0..n)
        .map(|_| NewQueueMessage {
            body: body.to_owned(),
            delay: Duration::ZERO,
        })
        .collect();
    store.enqueue(QueueName::WorkItems, copies).await.unwrap();
}

/// `Once(x)` calls `Count(x)`, which counts its runs and waits at `gate` before it returns 2x.
fn registry(runs: &Arc<AtomicU32>, gate: &Arc<Semaphore>) -> Registry {
    let mut reg = Registry::new();
    let (runs, gate) = (runs.clone(), gate.clone());
    reg.activity("Count", move |_c: ActivityContext, x: u64| {
        let runs = runs.clone();
        let gate = gate.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let _pass = gate.acquire().await.unwrap();
            Ok::<_, ActivityError>(x * 2)
        }
    });
    reg.orchestration("Once", |ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call_activity::<_, u64>("Count", x).await?)
    });
    reg
}

/// A hub on `store` with `settings`, a worker of [`registry`], and a `Once` instance whose
/// activity has started (and waits at `gate`).
async fn once_started(
    store: &Arc<MemoryStore>,
    settings: Settings,
    runs: &Arc<AtomicU32>,
    gate: &Arc<Semaphore>,
) -> (TaskHub, WorkerHandle, InstanceId) {
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry(runs, gate)).await.unwrap();
    let id = hub.client().start("Once", 21u64).await.unwrap();
    wait::until(
        "the activity started",
        || runs.load(Ordering::SeqCst) == 1,
        || worker.stats(),
    )
    .await;
    (hub, worker, id)
}

/// Waits until the copies put so far are taken from the queue (the worker's dropped copies
/// reach `dropped`, or one ran), then asserts that none ran: the activity ran once.
async fn copies_dropped_not_run(runs: &AtomicU32, worker: &WorkerHandle, dropped: u64, copy: &str) {
    wait::until(
        "the copies taken from the queue (run or dropped)",
        || runs.load(Ordering::SeqCst) > 1 || worker.stats().work_item_copies_dropped >= dropped,
        || (runs.load(Ordering::SeqCst), worker.stats()),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{copy} ran too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_one_work_item_run_once() {
    let runs = Arc::new(AtomicU32::new(0));
    // The activity waits here, so the copies arrive while it runs.
    let gate = Arc::new(Semaphore::new(0));
    let store = memory_store();
    let (hub, worker, id) = once_started(&store, fast_settings(), &runs, &gate).await;

    // Two copies while the activity runs.
    let body = work_item(&store, &id, id.partition(hub.partition_count())).await;
    let before = worker.stats().work_item_copies_dropped;
    put_copies(&store, &body, 2).await;
    copies_dropped_not_run(&runs, &worker, before + 2, "a copy of a running work item").await;
    gate.add_permits(100);
    let done = wait_done(&hub.client(), &id, Duration::from_secs(30)).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));

    // A copy after the result is recorded (by the turn that applied it).
    put_copies(&store, &body, 1).await;
    copies_dropped_not_run(
        &runs,
        &worker,
        before + 3,
        "a copy of a work item whose result is recorded",
    )
    .await;
    let left = store.stats(QueueName::WorkItems).await.unwrap().length;
    assert_eq!(left, 0, "the copies were deleted");
    worker.shutdown().await;
}

/// The running work item's own message is never deleted while it runs: when its visibility runs
/// out (here every renewal fails), the poller gets that very message again (a later delivery,
/// the same enqueue time); it goes back, uncounted, instead of being taken for a copy and
/// deleted (which would lose the work item if this worker then died before recording the
/// result). The activity runs once and its result is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_message_itself_is_kept_while_it_runs() {
    use taskhub_storage::faults::{FaultPlan, Op, Trigger};
    let runs = Arc::new(AtomicU32::new(0));
    let gate = Arc::new(Semaphore::new(0));
    // Every renewal of the work item fails, so its visibility runs out while it runs.
    let plan = (1..=1_000).fold(FaultPlan::none(), |plan, n| {
        plan.fail(
            Trigger::nth_of(Op::Extend, n),
            taskhub_storage::StorageError::Unavailable("renewal refused".into()),
        )
    });
    let store = Arc::new(MemoryStore::with_faults(Arc::new(SystemClock::new()), plan));
    let settings = Settings {
        work_item_visibility_timeout: Duration::from_secs(1),
        ..fast_settings()
    };
    let (hub, worker, id) = once_started(&store, settings, &runs, &gate).await;
    // Its message comes back (the claim ran out) and is given back, not deleted.
    let released = store.faults().calls(Op::Release);
    wait::until(
        "the running work item's own message delivered again and given back",
        || store.faults().calls(Op::Release) > released,
        || (store.faults().counts(), worker.stats()),
    )
    .await;
    assert_eq!(
        worker.stats().work_item_copies_dropped,
        0,
        "the running work item's own message was taken for a copy"
    );
    assert_eq!(
        store.stats(QueueName::WorkItems).await.unwrap().length,
        1,
        "the running work item is still in the queue"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "it did not run a second time"
    );
    gate.add_permits(100);
    let done = wait_done(&hub.client(), &id, Duration::from_secs(30)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    worker.shutdown().await;
}
