//! The runtime on the memory backend, whose checkpoint is NOT atomic, under seeded storage
//! faults and torn checkpoints: every instance still completes with the right output, no event
//! is applied to a history twice, and no instance row is left behind its history.
//!
//! Two bugs made an instance get stuck here under CPU load (when redeliveries and conflicts
//! are frequent); each has a deterministic test below as well:
//!
//! * a failed repair of the instance row (after a torn checkpoint) was given up while the
//!   messages that had brought the instance back were consumed anyway, so a Completed
//!   history kept a Running row forever (`failed_row_repair_keeps_the_messages`);
//! * a redelivered `ExecutionStarted` of an execution that had already finished was accepted
//!   as a new start, because the instance row still named that execution: the finished
//!   execution ran again from scratch and waited forever for the event it had already
//!   consumed (`duplicate_start_of_a_finished_execution_is_discarded`).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, InjectedFault, MemoryStore, Op, TearAfter, Trigger};
use taskhub_storage::{
    HistoryStore, NewQueueMessage, QueueName, QueueStore, StorageError, SystemClock,
};

/// Generous: a seed takes a few seconds even on a loaded machine; a stuck instance must still
/// fail the test rather than hang it.
const STUCK_AFTER: Duration = Duration::from_secs(120);

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration("Work", |ctx: OrchestrationContext, base: u64| async move {
        let mut sum = 0;
        for i in 0..3 {
            sum += ctx.call_activity::<_, u64>("Double", base + i).await?;
        }
        ctx.sleep(Duration::from_millis(30)).await;
        for r in
            when_all((0..3).map(|i| ctx.call_activity::<_, u64>("Double", base + 10 + i))).await
        {
            sum += r?;
        }
        let extra: u64 = ctx.wait_for_event("extra").await?;
        Ok::<_, OrchestrationError>(sum + extra)
    });
    reg.orchestration("One", |ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call_activity::<_, u64>("Double", x).await?)
    });
    reg
}

fn expected(base: u64) -> u64 {
    (0..3).map(|i| (base + i) * 2).sum::<u64>()
        + (0..3).map(|i| (base + 10 + i) * 2).sum::<u64>()
        + 1
}

async fn retry<T, F, Fut>(mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, TaskhubError>>,
{
    for _ in 0..200 {
        match f().await {
            Ok(v) => return v,
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("non-retryable client error: {e}"),
        }
    }
    panic!("client call kept failing");
}

async fn run_seed(seed: u64) {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    // Short visibility timeouts, so lost deletes and abandons come back within the test and
    // slow turns race with redeliveries. On a starved machine a message waiting for its turn
    // behind a slow session is redelivered past max_dequeue_count: it must not be
    // dead-lettered while its instance's session is alive (it once was, although it had been
    // applied, and the instance stalled when it was the only trigger left to reload).
    let settings = Settings {
        control_queue_visibility_timeout: Duration::from_millis(800),
        work_item_visibility_timeout: Duration::from_millis(800),
        // A torn checkpoint's outbox is re-sent once it is a lease interval old.
        lease_interval: Duration::from_secs(3),
        lease_renew_interval: Duration::from_secs(1),
        lease_acquire_interval: Duration::from_secs(1),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let n = 30u64;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(client.start("Work", i * 100).await.unwrap());
    }
    store.faults().set_plan(
        FaultPlan::none()
            .random(seed, 0.03, StorageError::Unavailable("injected".into()))
            .random_tears(0.15),
    );
    for id in &ids {
        retry(|| client.raise_event(id, "extra", &1u64)).await;
    }
    let deadline = tokio::time::Instant::now() + STUCK_AFTER;
    for id in &ids {
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match client.wait_for_completion(id, left).await {
                Ok(_) => break,
                Err(TaskhubError::Timeout(..)) => {
                    store.faults().set_plan(FaultPlan::none());
                    panic!("seed {seed}: {id} is stuck: {}", describe(&store, id).await);
                }
                Err(e) if e.is_retryable() => {}
                Err(e) => panic!("seed {seed}: {id}: {e}"),
            }
        }
    }
    let injected = store.faults().injected().len();
    store.faults().set_plan(FaultPlan::none());
    for (i, id) in ids.iter().enumerate() {
        let s = client
            .get_status(id, StatusOptions { history: true })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            s.status(),
            OrchestrationStatus::Completed,
            "seed {seed}: {id}: {:?}",
            s.row.failure
        );
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(expected(i as u64 * 100)),
            "seed {seed}: {id}"
        );
        let mut counts: HashMap<String, u32> = HashMap::new();
        for e in s.history.unwrap() {
            let key = match &e.event {
                EventKind::TaskCompleted { task_id, .. } => format!("done {task_id}"),
                EventKind::TaskScheduled { task_id, .. } => format!("sched {task_id}"),
                EventKind::TimerFired { task_id, .. } => format!("fired {task_id}"),
                EventKind::EventRaised { .. } => "event".into(),
                EventKind::ExecutionStarted { .. } => "start".into(),
                _ => continue,
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        assert!(
            counts.values().all(|c| *c == 1),
            "seed {seed}: {id}: an event was applied twice: {counts:?}"
        );
    }
    assert!(injected > 0, "seed {seed}: the plan injected no fault");
    worker.shutdown().await;
}

/// The row, the tail of the history, the queues and the dead letters, for the failure message
/// of a stuck instance.
async fn describe(store: &MemoryStore, id: &InstanceId) -> String {
    use taskhub_storage::{DeadLetterStore, InstanceStore};
    let row = store.get_instance(id).await.ok().flatten();
    let history = store.load_history(id).await.ok().flatten();
    let tail: Vec<&str> = history
        .as_ref()
        .map(|h| {
            h.events
                .iter()
                .rev()
                .take(4)
                .map(|e| e.event.type_name())
                .collect()
        })
        .unwrap_or_default();
    let outbox = history.as_ref().map_or(0, |h| h.pending_outbox.len());
    let mut queues = Vec::new();
    for q in (0..4).map(QueueName::Control).chain([QueueName::WorkItems]) {
        let length = store.stats(q).await.map(|s| s.length).unwrap_or(u64::MAX);
        queues.push(format!("{q}: {length}"));
    }
    let letters: Vec<String> = store
        .list_dead_letters(None, 10)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|l| l.reason)
        .collect();
    format!(
        "row status {:?}, last history events (newest first) {tail:?}, pending outbox {outbox}, \
         queue lengths {queues:?}, dead letters {letters:?}",
        row.map(|r| r.status)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_survives_faults_and_torn_checkpoints() {
    for seed in 1..=4 {
        run_seed(seed).await;
    }
}

/// The last turn's checkpoint is torn right after its history commit (the row still says
/// Running) and every attempt to repair the row on reload fails. The redelivered messages must
/// not be consumed until the row is repaired: the next delivery repairs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_row_repair_keeps_the_messages() {
    let unavailable = || StorageError::Unavailable("injected".into());
    // Checkpoints: 1 the client's start, 2 the first turn, 3 the last turn (the activity's
    // result is handed to the session in process and committed with it). The repair is the
    // only `put_instance`; 1 to 4 are its first try and 3 retries.
    let mut plan = FaultPlan::none().tear_checkpoint(3, TearAfter::HistoryCommitted);
    for n in 1..=4 {
        plan = plan.fail(Trigger::nth_of(Op::PutInstance, n), unavailable());
    }
    let store = Arc::new(MemoryStore::with_faults(Arc::new(SystemClock::new()), plan));
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("One", 21u64).await.unwrap();
    let done = match client
        .wait_for_completion(&id, Duration::from_secs(20))
        .await
    {
        Ok(done) => done,
        Err(e) => panic!("{e}: {}", describe(&store, &id).await),
    };
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    let injected = store.faults().injected();
    assert!(
        injected
            .iter()
            .any(|i| i.fault == InjectedFault::Torn(TearAfter::HistoryCommitted)),
        "the last turn was not torn: {injected:?}"
    );
    assert_eq!(
        store.faults().calls(Op::PutInstance),
        5,
        "four failed repairs, then one that worked"
    );
    worker.shutdown().await;
}

/// A start message of an execution that has already finished is redelivered (its visibility
/// timeout ran out under load, or deleting it failed). It must be discarded, not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_start_of_a_finished_execution_is_discarded() {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let client = hub.client();
    let id = client.start("Work", 7u64).await.unwrap();
    // Keep a copy of the start message as the worker will receive it.
    let queue = QueueName::Control(id.partition(hub.partition_count()));
    let start = store
        .dequeue(queue, 1, Duration::from_secs(60))
        .await
        .unwrap()
        .pop()
        .unwrap();
    store
        .abandon(queue, &start.receipt, Duration::ZERO)
        .await
        .unwrap();

    let worker = Worker::start(&hub, registry()).await.unwrap();
    client.raise_event(&id, "extra", &1u64).await.unwrap();
    let done = client
        .wait_for_completion(&id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.output::<u64>().unwrap(), Some(expected(7)));
    let events = store.load_history(&id).await.unwrap().unwrap().events;
    let before = worker.stats();

    store
        .enqueue(
            queue,
            vec![NewQueueMessage {
                body: start.body,
                delay: Duration::ZERO,
            }],
        )
        .await
        .unwrap();
    wait::until(
        "the duplicate start discarded",
        || worker.stats().discarded > before.discarded,
        || worker.stats(),
    )
    .await;
    let after = client
        .get_status(&id, StatusOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.status(), OrchestrationStatus::Completed);
    assert_eq!(
        worker.stats().turns,
        before.turns,
        "the execution ran again"
    );
    assert_eq!(
        store.load_history(&id).await.unwrap().unwrap().events,
        events
    );
    worker.shutdown().await;
}
