//! The runtime under injected storage faults, written once for any backend: each body takes a
//! backend store, wraps it in `FaultyStore` (taskhub-storage, feature `testing`: the same
//! `FaultPlan` as the memory backend's, torn checkpoints stopped by the shared ordered
//! checkpoint driver between two steps of the wrapped backend) and runs real workers on it.
//! Run by `storage_faults/faulty_memory.rs` (memory backend) and `azure/faults.rs` (Azurite).
//! Included as `#[path = "common/fault_suite.rs"] mod fault_suite;` next to `mod common;`
//! (with `../common/` from a test directory's `main.rs`).
#![allow(
    clippy::disallowed_methods,
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::history::with_history;
use crate::common::{find, wait_done};
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, InjectedFault, TearAfter};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, NewQueueMessage, QueueName, StepObserver, StorageError,
    StorageResult, SystemClock, TaskHubStore,
};

/// A stuck instance fails the test after this long rather than hang it.
const STUCK_AFTER: Duration = Duration::from_secs(180);

/// `backend` behind a fault wrapper with no faults yet.
pub fn faulty(backend: Arc<dyn TaskHubStore>) -> Arc<FaultyStore<dyn TaskHubStore>> {
    Arc::new(FaultyStore::new(
        backend,
        Arc::new(SystemClock::new()),
        FaultPlan::none(),
    ))
}

fn registry(timer: Duration) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration(
        "Work",
        move |ctx: OrchestrationContext, base: u64| async move {
            let mut sum = 0;
            for i in 0..2 {
                sum += ctx.call_activity::<_, u64>("Double", base + i).await?;
            }
            ctx.sleep(timer).await;
            for r in
                when_all((0..3).map(|i| ctx.call_activity::<_, u64>("Double", base + 10 + i))).await
            {
                sum += r?;
            }
            let extra: u64 = ctx.wait_for_event("extra").await?;
            Ok::<_, OrchestrationError>(sum + extra)
        },
    );
    reg.orchestration("One", |ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call_activity::<_, u64>("Double", x).await?)
    });
    reg
}

fn expected(base: u64) -> u64 {
    (0..2).map(|i| (base + i) * 2).sum::<u64>()
        + (0..3).map(|i| (base + 10 + i) * 2).sum::<u64>()
        + 1
}

async fn retry<T, F, Fut>(mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, TaskhubError>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if e.is_retryable() && start.elapsed() < STUCK_AFTER => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("client call failed: {e}"),
        }
    }
}

/// What a run under faults is given.
pub struct FaultRun {
    /// The backend, unwrapped (a fresh hub).
    pub backend: Arc<dyn TaskHubStore>,
    /// The worker settings.
    pub settings: Settings,
    /// The plan installed once every instance has started.
    pub plan: FaultPlan,
    /// How many instances.
    pub instances: u64,
    /// The durable timer inside each instance.
    pub timer: Duration,
    /// Names the run in failure messages.
    pub label: String,
}

/// Starts `instances` instances of `Work`, installs the plan, raises their events, and checks
/// that every instance completes with the right output and that no event was applied to a
/// history twice (no duplicated or lost history). Returns the faults the plan injected.
pub async fn every_instance_finishes_under(run: FaultRun) -> Vec<InjectedFault> {
    let FaultRun {
        backend,
        settings,
        plan,
        instances,
        timer,
        label,
    } = run;
    let store = faulty(backend);
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry(timer)).await.unwrap();
    let client = hub.client();
    let mut ids = Vec::new();
    for i in 0..instances {
        ids.push(client.start("Work", i * 100).await.unwrap());
    }
    store.faults().set_plan(plan);
    for id in &ids {
        retry(|| client.raise_event(id, "extra", &1u64)).await;
    }
    let started = Instant::now();
    for id in &ids {
        loop {
            let left = STUCK_AFTER.saturating_sub(started.elapsed());
            match client.wait_for_completion(id, left).await {
                Ok(_) => break,
                Err(TaskhubError::Timeout(..)) => {
                    store.faults().set_plan(FaultPlan::none());
                    panic!("{label}: {id} is stuck: {}", describe(&hub, id).await);
                }
                Err(e) if e.is_retryable() => {}
                Err(e) => panic!("{label}: {id}: {e}"),
            }
        }
    }
    let injected: Vec<InjectedFault> = store
        .faults()
        .injected()
        .into_iter()
        .map(|i| i.fault)
        .collect();
    store.faults().set_plan(FaultPlan::none());
    for (i, id) in ids.iter().enumerate() {
        let s = with_history(&client, id).await;
        assert_eq!(
            s.status(),
            OrchestrationStatus::Completed,
            "{label}: {id}: {:?}",
            s.row.failure
        );
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(expected(i as u64 * 100)),
            "{label}: {id}"
        );
        let mut counts: HashMap<String, u32> = HashMap::new();
        for e in s.history.unwrap() {
            let key = match &e.event {
                EventKind::TaskCompleted { task_id, .. } => format!("done {task_id}"),
                EventKind::TaskScheduled { task_id, .. } => format!("sched {task_id}"),
                EventKind::TimerCreated { task_id, .. } => format!("timer {task_id}"),
                EventKind::TimerFired { task_id, .. } => format!("fired {task_id}"),
                EventKind::EventRaised { .. } => "event".into(),
                EventKind::ExecutionStarted { .. } => "start".into(),
                EventKind::ExecutionCompleted { .. } => "completed".into(),
                _ => continue,
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 15, "{label}: {id}: history {counts:?}");
        assert!(
            counts.values().all(|c| *c == 1),
            "{label}: {id}: an event was applied twice: {counts:?}"
        );
    }
    worker.shutdown().await;
    injected
}

/// Opens a fresh hub of a backend.
pub type NewBackend =
    fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Arc<dyn TaskHubStore>>>>;

/// A backend's runs under faults: each on a fresh hub from `backend`.
pub struct Sweep {
    /// Opens a fresh hub.
    pub backend: NewBackend,
    /// The worker settings.
    pub settings: Settings,
    /// The durable timer inside each instance.
    pub timer: Duration,
    /// Begins each run's label (`"azure, "`).
    pub label: &'static str,
}

impl Sweep {
    async fn run(&self, plan: FaultPlan, instances: u64, label: String) -> Vec<InjectedFault> {
        every_instance_finishes_under(FaultRun {
            backend: (self.backend)().await,
            settings: self.settings.clone(),
            plan,
            instances,
            timer: self.timer,
            label: format!("{}{label}", self.label),
        })
        .await
    }

    /// One run per step of the ordered checkpoint, with every third of the first
    /// `checkpoints` checkpoints torn after it: each run tears at its step, and every one of
    /// `instances` instances finishes.
    pub async fn torn_after_each_step(&self, checkpoints: u64, instances: u64) {
        for step in TearAfter::ALL {
            let plan = tear_every_third_after(step, checkpoints);
            let label = format!("torn after step {}", step.step());
            let injected = self.run(plan, instances, label).await;
            assert!(
                injected.contains(&InjectedFault::Torn(step)),
                "step {}: nothing was torn: {injected:?}",
                step.step()
            );
        }
    }

    /// One run per seed of [`seeded`] faults: each tears a checkpoint, and every one of
    /// `instances` instances finishes.
    pub async fn seeded(&self, seeds: std::ops::RangeInclusive<u64>, instances: u64) {
        for seed in seeds {
            let injected = self
                .run(seeded(seed), instances, format!("seed {seed}"))
                .await;
            assert!(
                injected.iter().any(|f| matches!(f, InjectedFault::Torn(_))),
                "seed {seed}: no checkpoint was torn"
            );
        }
    }
}

/// A plan that tears checkpoints 2, 5, 8, ... (the client's starts come before the plan) after
/// `step`: a torn checkpoint in every phase of the instances' lives.
pub fn tear_every_third_after(step: TearAfter, checkpoints: u64) -> FaultPlan {
    (0..checkpoints / 3).fold(FaultPlan::none(), |plan, k| {
        plan.tear_checkpoint(2 + 3 * k, step)
    })
}

/// Seeded random failures of any call (3 %) and torn checkpoints (15 %, after a random step).
pub fn seeded(seed: u64) -> FaultPlan {
    FaultPlan::none()
        .random(seed, 0.03, StorageError::Unavailable("injected".into()))
        .random_tears(0.15)
}

/// The first fault injected was the tear after the enqueue.
fn assert_torn_after_enqueue(store: &FaultyStore<dyn TaskHubStore>) {
    assert_eq!(
        store.faults().injected().first().map(|i| i.fault.clone()),
        Some(InjectedFault::Torn(TearAfter::OutboundSent))
    );
}

/// Work items in the queue, visible or not.
async fn work_items_left(hub: &TaskHub) -> u64 {
    hub.store()
        .stats(QueueName::WorkItems)
        .await
        .unwrap()
        .length
}

/// An instance of `Once` (one activity, `Held`, that runs once `gate` is open) started on a
/// faulty `backend` whose next checkpoint is torn after its enqueue, with what the torn-outbox
/// tests look at.
struct TornOnce {
    store: Arc<FaultyStore<dyn TaskHubStore>>,
    hub: TaskHub,
    /// The hub's `torn_outbox_grace`.
    grace: Duration,
    /// Runs of `Held`.
    runs: Arc<AtomicU32>,
    client: TaskHubClient,
    id: InstanceId,
    /// The registry for the worker (none started yet).
    reg: Registry,
}

async fn torn_once(
    backend: Arc<dyn TaskHubStore>,
    settings: Settings,
    gate: Arc<AtomicBool>,
) -> TornOnce {
    let store = faulty(backend);
    let settings = Settings {
        extended_sessions_enabled: false,
        ..settings
    };
    let grace = settings.torn_outbox_grace();
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let mut reg = Registry::new();
    {
        let runs = runs.clone();
        reg.activity("Held", move |_c: ActivityContext, x: u64| {
            let (runs, gate) = (runs.clone(), gate.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                while !gate.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Ok::<_, ActivityError>(x + 1)
            }
        });
    }
    reg.orchestration("Once", |ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call_activity::<_, u64>("Held", x).await?)
    });
    let client = hub.client();
    let id = client.start("Once", 1u64).await.unwrap();
    // The worker's first checkpoint is the first turn's.
    store
        .faults()
        .set_plan(FaultPlan::none().tear_checkpoint(1, TearAfter::OutboundSent));
    TornOnce {
        store,
        hub,
        grace,
        runs,
        client,
        id,
        reg,
    }
}

/// A checkpoint torn after step 2 (its activity's work item sent, the pending outbox not
/// cleared) is re-sent by the instance's next loader once — not before that loader has seen
/// it pending for a lease interval, when its writer could still be sending it — and then the
/// outbox is gone: a second load (extended sessions off, so every batch loads the history)
/// sends nothing. Of the two copies of the work item (the torn turn's claimed original, visible
/// again once its claim ran out, and the re-sent one) whichever comes second reaches the worker
/// that runs the first and is dropped there, not run (`worker/shared/run_ledger.rs`): the activity is
/// held until a copy has been dropped, so both loads happen before anything else writes the
/// instance's history, and each copy sent shows as one dropped.
pub async fn torn_outbox_is_resent_once(backend: Arc<dyn TaskHubStore>, settings: Settings) {
    let gate = Arc::new(AtomicBool::new(false));
    let TornOnce {
        store,
        hub,
        grace,
        runs,
        client,
        id,
        reg,
    } = torn_once(backend, settings, gate.clone()).await;
    let worker = Worker::start(&hub, reg).await.unwrap();
    let stats = worker.stats_source();
    // The original work item runs; the copy the first loader re-sent is dropped.
    let started = Instant::now();
    while runs.load(Ordering::SeqCst) < 1 || stats().work_item_copies_dropped < 1 {
        assert!(
            started.elapsed() < STUCK_AFTER,
            "the torn checkpoint's outbox was not re-sent: {} runs, {:?}; {}",
            runs.load(Ordering::SeqCst),
            stats(),
            describe(&hub, &id).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The outbox was written after `started`, and a loader re-sends it only once it has seen
    // it pending for its grace (its writer could still be sending it before that, or a claimed
    // work item still be hidden). The original runs held, so its result is not seen and the
    // work item is sent again.
    let resent_after = started.elapsed();
    assert!(
        resent_after + Duration::from_millis(100) >= grace,
        "the outbox was re-sent {resent_after:?} after the worker started, before its grace \
         ({grace:?}) passed"
    );
    assert_torn_after_enqueue(&store);
    gate.store(true, Ordering::SeqCst);
    let done = client
        .wait_for_completion(&id, STUCK_AFTER)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.output::<u64>().unwrap(), Some(2));
    worker.shutdown().await;
    let left = work_items_left(&hub).await;
    assert_eq!(
        (
            runs.load(Ordering::SeqCst),
            stats().work_item_copies_dropped,
            left
        ),
        (1, 1, 0),
        "(activity runs, copies dropped, work items left): the outbox must be sent once more \
         by the first loader, then be gone (the results' loader must not send it a third \
         time), and the copy must not run where the original ran"
    );
    let history = hub.store().load_history(&id).await.unwrap().unwrap();
    assert!(history.pending_outbox.is_empty());
}

/// A torn checkpoint's work item whose claimed original surfaced and ran before the outbox's
/// grace passed is left out of the re-send (issue 33, item 8): its result is among the messages
/// the loader holds. The checkpoint is torn after its enqueue, so the claimed original stays
/// hidden for the work-item visibility timeout; `settings` should make that longer than the
/// lease interval, so that only the grace's floor (visibility plus a poll) lets it report
/// first. One run, no copy ever dequeued, one message counted as left out.
pub async fn torn_outbox_leaves_out_a_work_item_whose_result_was_seen(
    backend: Arc<dyn TaskHubStore>,
    settings: Settings,
) {
    let TornOnce {
        store,
        hub,
        grace,
        runs,
        client,
        id,
        reg,
    } = torn_once(backend, settings, Arc::new(AtomicBool::new(true))).await;
    let started = Instant::now();
    let worker = Worker::start(&hub, reg).await.unwrap();
    let stats = worker.stats_source();
    let done = client
        .wait_for_completion(&id, STUCK_AFTER)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.output::<u64>().unwrap(), Some(2));
    assert_torn_after_enqueue(&store);
    // The turn that applied the result ran only once the outbox was settled.
    assert!(
        started.elapsed() + Duration::from_millis(100) >= grace,
        "finished {:?} after the start, before the outbox's grace ({grace:?})",
        started.elapsed()
    );
    worker.shutdown().await;
    let left = work_items_left(&hub).await;
    assert_eq!(
        (
            runs.load(Ordering::SeqCst),
            stats().work_item_copies_dropped,
            stats().outbox_messages_left_out,
            left
        ),
        (1, 0, 1, 0),
        "(activity runs, copies dropped, messages left out, work items left): the work item \
         whose result the loader held must not be sent again"
    );
    let history = hub.store().load_history(&id).await.unwrap().unwrap();
    assert!(history.pending_outbox.is_empty());
}

/// Fails the first `fail` row repairs (checkpoints of no events and no messages that write
/// the instance row) before they write anything, counting every repair.
struct FailRepairs {
    fail: AtomicU32,
    seen: AtomicU32,
}

impl StepObserver for FailRepairs {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        let repair = request
            .history
            .as_ref()
            .is_some_and(|h| h.events.is_empty())
            && request.instance.is_some()
            && request.outbound.is_empty()
            && request.consumed.is_empty();
        if step != CheckpointStep::Validated || !repair {
            return Ok(());
        }
        self.seen.fetch_add(1, Ordering::SeqCst);
        let left = self.fail.load(Ordering::SeqCst);
        if left > 0 {
            self.fail.store(left - 1, Ordering::SeqCst);
            return Err(StorageError::Unavailable("injected: row repair".into()));
        }
        Ok(())
    }
}

/// The last turn's checkpoint is torn right after its history commit (the row still says
/// Running) and every attempt to repair the row on reload fails. The redelivered messages must
/// not be consumed until the row is repaired: the next delivery repairs it. (Once an instance
/// got stuck here under load: the failed repair was given up while the messages that had
/// brought the instance back were consumed, so a Completed history kept a Running row.)
pub async fn failed_row_repair_keeps_the_messages(backend: Arc<dyn TaskHubStore>) {
    // Checkpoints: 1 the client's start, 2 the first turn, 3 the last turn (the activity's
    // result is handed to the session in process and committed with it). The repair is a
    // checkpoint of its own; its first try and 3 retries fail.
    let repairs = Arc::new(FailRepairs {
        fail: AtomicU32::new(4),
        seen: AtomicU32::new(0),
    });
    let store = Arc::new(
        FaultyStore::new(backend, Arc::new(SystemClock::new()), FaultPlan::none())
            .observe_steps(repairs.clone()),
    );
    store
        .faults()
        .set_plan(FaultPlan::none().tear_checkpoint(3, TearAfter::HistoryCommitted));
    let hub = TaskHub::open(store.clone(), crate::common::fast_settings())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry(Duration::from_millis(30)))
        .await
        .unwrap();
    let client = hub.client();
    let id = client.start("One", 21u64).await.unwrap();
    let done = match client.wait_for_completion(&id, STUCK_AFTER).await {
        Ok(done) => done,
        Err(e) => panic!("{e}: {}", describe(&hub, &id).await),
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
        repairs.seen.load(Ordering::SeqCst),
        5,
        "four failed repairs, then one that worked"
    );
    worker.shutdown().await;
}

/// A start message of an execution that has already finished is redelivered (its visibility
/// timeout ran out under load, or deleting it failed). It must be discarded, not run again
/// (it once was accepted as a new start, because the instance row still named that
/// execution, and the finished execution waited forever for the event it had consumed).
pub async fn duplicate_start_of_a_finished_execution_is_discarded(backend: Arc<dyn TaskHubStore>) {
    let store = backend;
    let hub = TaskHub::open(store.clone(), crate::common::fast_settings())
        .await
        .unwrap();
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

    let worker = Worker::start(&hub, registry(Duration::from_millis(30)))
        .await
        .unwrap();
    client.raise_event(&id, "extra", &1u64).await.unwrap();
    let done = wait_done(&client, &id, STUCK_AFTER).await;
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
    crate::common::wait::until(
        "the duplicate start discarded",
        || worker.stats().discarded > before.discarded,
        || worker.stats(),
    )
    .await;
    let after = find(&client, &id).await.unwrap();
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

/// The row, the tail of the history, the outbox and the queues, for a stuck instance.
pub async fn describe(hub: &TaskHub, id: &InstanceId) -> String {
    let store = hub.store();
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
    for q in (0..hub.partition_count())
        .map(QueueName::Control)
        .chain([QueueName::WorkItems])
    {
        let length = store.stats(q).await.map(|s| s.length).unwrap_or(u64::MAX);
        queues.push(format!("{q}: {length}"));
    }
    format!(
        "row status {:?}, last history events (newest first) {tail:?}, pending outbox {outbox}, \
         queue lengths {queues:?}",
        row.map(|r| r.status)
    )
}
