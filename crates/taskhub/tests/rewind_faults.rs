//! A crash at any step of a rewind leaves either the failed instance or the rewound one, never
//! a mix (issue 35, item 3). An orchestration `Order` charges (`Charge` succeeds) and pays
//! (`Pay` fails until the test heals it); it fails, the client rewinds it, and the rewind turn's
//! checkpoint — one write that replaces the history under the same execution ID — is
//!
//! * torn after each step of the ordered checkpoint in turn (memory and Azure: the shared
//!   driver stops it through a `StepObserver`, as if the process died there; PostgreSQL runs
//!   the same steps inside one transaction, so a stop before its commit rolls it all back),
//! * failed before it wrote anything, with a storage error the runtime does not retry,
//! * or committed whole with its answer lost (a retryable error: the retry finds the history
//!   moved on),
//! * or refused by its fence: another owner takes the partition's lease once the checkpoint is
//!   validated (memory, Azure, PostgreSQL), and the worker rewinds the instance once it holds
//!   the lease again,
//!
//! on memory, SQLite (one transaction without steps: never torn, only failed or answered
//! wrongly), Azure and PostgreSQL (`scripts/with-azurite.sh scripts/with-postgres.sh cargo test
//! -p taskhub --test rewind_faults`; without them the `azure_`/`postgres_` tests fail, saying
//! so).
//! The clock is a `ManualClock` that stands still from the fault on, so the worker can neither
//! retry nor redeliver while the test reads storage: the history is then exactly the failed one
//! (and the rewind request is still queued) or exactly the rewound one (`ExecutionRewound`, no
//! `ExecutionFailed`, no `TaskFailed`; for a tear, exactly the events the checkpoint wrote).
//! Then the same worker goes on (or it is dropped, as a crashed process, and a new worker takes
//! the partition over), the clock moves, and the instance completes: `Pay` run once more,
//! `Charge` not again, one `ExecutionRewound`, no failure left in the history, and the history
//! seen after the fault (if rewound) is the start of the final one. Every wait is bounded.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::queues::partition_row;
use common::*;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, Op, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, ManualClock, PartitionRow, QueueName, StepObserver,
    StorageError, StorageResult, TaskHubStore,
};

/// Real time any one wait of this test may take.
const BOUND: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// The ordered checkpoint: a tear after step 1 leaves the history committed.
    Memory,
    /// One transaction, no steps to observe: never torn.
    Sqlite,
    /// The ordered checkpoint, as on memory.
    Azure,
    /// The steps inside one transaction: a tear before its commit (after any step but the
    /// last) rolls the whole checkpoint back.
    Postgres,
}

impl Backend {
    /// True if a committed checkpoint leaves no pending outbox at any point.
    fn transactional(self) -> bool {
        matches!(self, Self::Sqlite | Self::Postgres)
    }
}

/// What happens to the rewind turn's checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Stopped right after this step (memory: the ordered checkpoint), as if the process died;
    /// the runtime sees a retryable error.
    TornAfter(CheckpointStep),
    /// Fails before it writes anything, with an error the runtime does not retry.
    Failed,
    /// Commits whole, then reports a retryable error (a lost answer).
    AnswerLost,
    /// Its partition's lease is taken by another owner once it is validated: the fence check
    /// refuses it (`Fenced`), and the worker gets the lease back only once the thief's has
    /// expired.
    Fenced,
}

impl Fault {
    /// True if the history is rewound in storage on `backend` once the fault has happened.
    fn leaves_rewound(self, backend: Backend) -> bool {
        match self {
            Self::TornAfter(step) if backend == Backend::Postgres => {
                step == CheckpointStep::OutboxCleared
            }
            Self::TornAfter(step) => step >= CheckpointStep::HistoryCommitted,
            Self::Failed | Self::Fenced => false,
            Self::AnswerLost => true,
        }
    }
}

/// Who goes on after the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// The same worker: it retries, or its batch comes back.
    SameWorker,
    /// The worker is dropped (it stops at once, its leases left to expire, as a crashed
    /// process's) and a new worker on a new hub handle takes over.
    NewWorker,
}

/// Run counts of the activities, and the switch that heals `Pay`.
#[derive(Default)]
struct Probe {
    charge: AtomicU32,
    pay: AtomicU32,
    healed: AtomicBool,
}

fn registry(probe: &Arc<Probe>) -> Registry {
    let mut reg = Registry::new();
    let p = probe.clone();
    reg.activity("Charge", move |_c: ActivityContext, x: u64| {
        let p = p.clone();
        async move {
            p.charge.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ActivityError>(x + 1)
        }
    });
    let p = probe.clone();
    reg.activity("Pay", move |_c: ActivityContext, x: u64| {
        let p = p.clone();
        async move {
            p.pay.fetch_add(1, Ordering::SeqCst);
            if p.healed.load(Ordering::SeqCst) {
                Ok::<_, ActivityError>(x * 10)
            } else {
                Err(ActivityError::new("payment service unavailable"))
            }
        }
    });
    reg.orchestration("Order", |ctx: OrchestrationContext, x: u64| async move {
        let charged: u64 = ctx.call_activity("Charge", x).await?;
        let paid: u64 = ctx.call_activity("Pay", charged).await?;
        Ok::<_, OrchestrationError>(charged + paid)
    });
    reg
}

/// `Order(4)`: charged 5, paid 50.
const INPUT: u64 = 4;
const OUTPUT: u64 = 55;

fn is_rewind(request: &CheckpointRequest) -> bool {
    request.history.as_ref().is_some_and(|h| {
        h.new_execution
            && h.events
                .iter()
                .any(|e| matches!(e.event, EventKind::ExecutionRewound { .. }))
    })
}

/// Tears the first rewind checkpoint after `step`, keeping the events it wrote.
struct TearRewind {
    step: Option<CheckpointStep>,
    /// The rewound history the torn checkpoint carried, once torn.
    torn: Mutex<Option<Vec<HistoryEvent>>>,
    /// Rewind checkpoints seen (every step 0 of one).
    rewinds: AtomicU32,
    /// A rewind checkpoint ran to its last step.
    completed: AtomicBool,
    /// For [`Fault::Fenced`]: the store through which the lease is taken away.
    thief: Option<Arc<dyn TaskHubStore>>,
    /// The epoch the rewind ran under and the one the thief took, once it did.
    stolen: Mutex<Option<(u64, u64)>>,
}

impl TearRewind {
    fn new(step: Option<CheckpointStep>, thief: Option<Arc<dyn TaskHubStore>>) -> Self {
        Self {
            step,
            torn: Mutex::new(None),
            rewinds: AtomicU32::new(0),
            completed: AtomicBool::new(false),
            thief,
            stolen: Mutex::new(None),
        }
    }

    /// Takes the lease of the rewind's partition for another owner (bumping its epoch), from
    /// inside the checkpoint, before its fence is checked.
    fn steal(&self, request: &CheckpointRequest) {
        let (Some(thief), Some(fence)) = (self.thief.clone(), request.fence) else {
            return;
        };
        let mut stolen = self.stolen.lock().unwrap();
        if stolen.is_some() {
            return;
        }
        let epoch = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async move {
                let rows = thief.list_partitions().await.unwrap();
                let row = rows
                    .into_iter()
                    .find(|r| r.partition == fence.partition)
                    .unwrap();
                let next = PartitionRow {
                    owner: Some("thief".to_owned()),
                    epoch: row.epoch + 1,
                    ..row.clone()
                };
                thief.put_partition(&next, row.etag.as_ref()).await.unwrap();
                next.epoch
            })
        });
        *stolen = Some((fence.epoch, epoch));
    }
}

impl StepObserver for TearRewind {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        if !is_rewind(request) {
            return Ok(());
        }
        if step == CheckpointStep::Validated {
            self.rewinds.fetch_add(1, Ordering::SeqCst);
            self.steal(request);
        }
        if step == CheckpointStep::OutboxCleared {
            self.completed.store(true, Ordering::SeqCst);
        }
        let mut torn = self.torn.lock().unwrap();
        if Some(step) != self.step || torn.is_some() {
            return Ok(());
        }
        *torn = request.history.as_ref().map(|h| h.events.clone());
        Err(StorageError::Unavailable(format!(
            "injected: the rewind's checkpoint torn after {step:?}"
        )))
    }
}

fn settings() -> Settings {
    Settings {
        partition_count: 1,
        lease_interval: Duration::from_secs(5),
        lease_renew_interval: Duration::from_secs(1),
        lease_acquire_interval: Duration::from_secs(1),
        control_queue_visibility_timeout: Duration::from_secs(5),
        work_item_visibility_timeout: Duration::from_secs(5),
        max_work_item_polling_interval: Duration::from_secs(1),
        ..fast_settings()
    }
}

/// A fresh backend of `kind` on `clock` (`dir` holds a SQLite file; Azure and PostgreSQL
/// keep time themselves).
async fn backend(kind: Backend, clock: &Arc<ManualClock>, dir: &TempDir) -> Arc<dyn TaskHubStore> {
    match kind {
        Backend::Azure => backends::azure_store(&backends::unique_hub_name()).await,
        Backend::Postgres => backends::postgres_store(&backends::unique_hub_name()).await,
        Backend::Memory => Arc::new(MemoryStore::new(clock.clone())),
        Backend::Sqlite => Arc::new(
            taskhub_sqlite::SqliteStore::open(
                taskhub_sqlite::SqliteOptions::new(dir.0.join("hub.db")).with_clock(clock.clone()),
            )
            .unwrap(),
        ),
    }
}

fn count(events: &[HistoryEvent], name: &str) -> usize {
    events
        .iter()
        .filter(|e| e.event.type_name() == name)
        .count()
}

fn kinds(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event.type_name()).collect()
}

/// Scheduling events of the activity `name`.
fn scheduled(events: &[HistoryEvent], name: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(&e.event, EventKind::TaskScheduled { name: n, .. } if n == name))
        .count()
}

/// Waits (bounded, real time) for `id` to finish; returns its status.
async fn finished(client: &TaskHubClient, id: &InstanceId, label: &str) -> InstanceStatus {
    let what = format!("{label}: {id} finishes within {BOUND:?}");
    completes_within(client, id, BOUND, &what).await
}

/// The rewound history the final one starts with: up to the end of the rewind turn (the first
/// `OrchestratorCompleted` after `ExecutionRewound`).
fn rewind_turn_prefix(fin: &[HistoryEvent]) -> Vec<HistoryEvent> {
    let at = fin
        .iter()
        .position(|e| matches!(e.event, EventKind::ExecutionRewound { .. }))
        .expect("ExecutionRewound in the final history");
    let end = fin[at..]
        .iter()
        .position(|e| matches!(e.event, EventKind::OrchestratorCompleted))
        .map(|i| at + i + 1)
        .expect("the rewind turn ends");
    fin[..end].to_vec()
}

/// One run: `Order` fails, is rewound, the rewind's checkpoint meets `fault`, `then` goes on.
async fn rewind_under(kind: Backend, fault: Fault, then: Then) {
    let label = format!("{kind:?}, {fault:?}, {then:?}");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let dir = TempDir::new("rewind-faults");
    let inner = backend(kind, &clock, &dir).await;
    let tear = Arc::new(TearRewind::new(
        match fault {
            Fault::TornAfter(step) => Some(step),
            _ => None,
        },
        (fault == Fault::Fenced).then(|| inner.clone()),
    ));
    let store = Arc::new(
        FaultyStore::new(inner.clone(), clock.clone(), FaultPlan::none())
            .observe_steps(tear.clone()),
    );
    let faulty: Arc<dyn TaskHubStore> = store.clone();
    let hub = TaskHub::open_with_clock(faulty, settings(), clock.clone())
        .await
        .unwrap();
    let probe = Arc::new(Probe::default());
    let worker = Worker::start(&hub, registry(&probe)).await.unwrap();
    let client = hub.client();

    // The clock stands still: the start, both activities and their results go by wake-ups.
    let id = client.start("Order", INPUT).await.unwrap();
    let done = finished(&client, &id, &label).await;
    assert_eq!(done.status(), OrchestrationStatus::Failed, "{label}");
    let failed = inner.load_history(&id).await.unwrap().unwrap();
    assert_eq!(
        (
            count(&failed.events, "TaskFailed"),
            count(&failed.events, "ExecutionFailed"),
            probe.charge.load(Ordering::SeqCst),
            probe.pay.load(Ordering::SeqCst),
        ),
        (1, 1, 1, 1),
        "{label}: failed once: {:?}",
        kinds(&failed.events)
    );

    // The rewind: the client's write is checkpoint 1 of the plan, the rewind turn's is 2.
    probe.healed.store(true, Ordering::SeqCst);
    match fault {
        Fault::TornAfter(_) | Fault::Fenced => {}
        Fault::Failed => store.faults().set_plan(FaultPlan::none().fail(
            Trigger::nth_of(Op::Checkpoint, 2),
            StorageError::Backend("injected: the rewind's checkpoint failed".into()),
        )),
        Fault::AnswerLost => store.faults().set_plan(FaultPlan::none().lose_response(
            Trigger::nth_of(Op::Checkpoint, 2),
            StorageError::Unavailable("injected: the rewind's answer lost".into()),
        )),
    }
    client.rewind(&id, Some("payments are back")).await.unwrap();
    // A lost answer is recorded as its call begins: wait for the call to have done its work
    // (its last step observed; SQLite, which has no steps, commits it in one go).
    let hit = || async {
        match fault {
            Fault::TornAfter(_) => tear.torn.lock().unwrap().is_some(),
            Fault::Failed => !store.faults().injected().is_empty(),
            // Refused: counted once the worker has given its batch back.
            Fault::Fenced => {
                tear.stolen.lock().unwrap().is_some() && worker.stats().checkpoint_conflicts > 0
            }
            Fault::AnswerLost => {
                !store.faults().injected().is_empty()
                    && (tear.completed.load(Ordering::SeqCst)
                        || (kind == Backend::Sqlite
                            && inner
                                .load_history(&id)
                                .await
                                .unwrap()
                                .is_some_and(|h| count(&h.events, "ExecutionRewound") > 0)))
            }
        }
    };
    wait::until_async(&format!("{label}: the fault"), hit, || async {
        (store.faults().injected(), worker.stats())
    })
    .await;
    if let Some((ran_under, taken)) = *tear.stolen.lock().unwrap() {
        assert_eq!(
            taken,
            ran_under + 1,
            "{label}: the rewind ran under the current epoch"
        );
        assert!(
            store.faults().injected().is_empty(),
            "{label}: refused by the fence alone"
        );
    }
    if let Fault::Failed | Fault::AnswerLost = fault {
        let injected = store.faults().injected();
        assert_eq!(
            (injected.len(), injected[0].op, injected[0].op_call),
            (1, Op::Checkpoint, 2),
            "{label}: {injected:?}"
        );
    }

    // The clock stands still: what storage holds now is what a crash here leaves.
    let at_fault = inner.load_history(&id).await.unwrap().unwrap();
    let events = &at_fault.events;
    let row = inner.get_instance(&id).await.unwrap().unwrap();
    assert_eq!(
        row.status,
        OrchestrationStatus::Running,
        "{label}: the rewind turned the row Running"
    );
    let rewound = count(events, "ExecutionRewound") > 0;
    assert_eq!(
        rewound,
        fault.leaves_rewound(kind),
        "{label}: history at the fault: {:?}",
        kinds(events)
    );
    if rewound {
        assert_eq!(
            (
                count(events, "ExecutionRewound"),
                count(events, "ExecutionFailed"),
                count(events, "TaskFailed")
            ),
            (1, 0, 0),
            "{label}: a mix of failed and rewound history: {:?}",
            kinds(events)
        );
        assert_eq!(at_fault.execution_id, failed.execution_id, "{label}");
        assert_ne!(at_fault.etag, failed.etag, "{label}");
        assert_eq!(
            events[..2],
            failed.events[..2],
            "{label}: the start and its turn are kept"
        );
        assert_eq!(
            scheduled(events, "Charge"),
            1,
            "{label}: the charge is kept"
        );
        assert_eq!(
            scheduled(events, "Pay"),
            1,
            "{label}: the payment scheduled again"
        );
        if let Some(written) = tear.torn.lock().unwrap().as_ref() {
            assert_eq!(
                events, written,
                "{label}: exactly the events the torn checkpoint wrote"
            );
        }
        let cleared = matches!(
            fault,
            Fault::AnswerLost | Fault::TornAfter(CheckpointStep::OutboxCleared)
        ) || kind.transactional();
        assert_eq!(
            at_fault.pending_outbox.is_empty(),
            cleared,
            "{label}: the pending outbox of a torn checkpoint keeps its messages"
        );
    } else {
        assert_eq!(
            at_fault, failed,
            "{label}: exactly the failed history, and its ETag"
        );
        let control = inner.stats(QueueName::Control(0)).await.unwrap().length;
        assert!(control >= 1, "{label}: the rewind request is still queued");
    }

    // Go on: the same worker once the clock moves, or a new one after a crash.
    let (hub, worker) = match then {
        Then::SameWorker => (hub, worker),
        Then::NewWorker => {
            drop(worker);
            drop(hub);
            let hub = TaskHub::open_with_clock(inner.clone(), settings(), clock.clone())
                .await
                .unwrap();
            let worker = Worker::start(&hub, registry(&probe)).await.unwrap();
            (hub, worker)
        }
    };
    let client = hub.client();
    let advancing = keep_advancing(clock.clone());
    let done = finished(&client, &id, &label).await;
    assert_eq!(
        done.status(),
        OrchestrationStatus::Completed,
        "{label}: {:?}",
        done.row.failure
    );
    assert_eq!(done.output::<u64>().unwrap(), Some(OUTPUT), "{label}");
    let charge = probe.charge.load(Ordering::SeqCst);
    let pay = probe.pay.load(Ordering::SeqCst);
    assert_eq!(
        charge, 1,
        "{label}: the successful activity did not run again"
    );
    match then {
        Then::SameWorker => assert_eq!(pay, 2, "{label}: the payment ran once more"),
        // A crashed writer's claimed work item and the outbox its successor re-sends can both
        // run (INVARIANTS, "When an activity may run twice", case 4): at most one extra run.
        Then::NewWorker => assert!(
            (2..=3).contains(&pay),
            "{label}: the payment ran again, at most twice: {pay} runs in all"
        ),
    }
    let last = inner.load_history(&id).await.unwrap().unwrap();
    let fin = &last.events;
    assert_eq!(
        (
            count(fin, "ExecutionRewound"),
            count(fin, "ExecutionFailed"),
            count(fin, "TaskFailed"),
            count(fin, "ExecutionCompleted"),
            scheduled(fin, "Charge"),
            scheduled(fin, "Pay"),
            count(fin, "TaskCompleted"),
        ),
        (1, 0, 0, 1, 1, 1, 2),
        "{label}: final history {:?}",
        kinds(fin)
    );
    let rewind_turn = rewind_turn_prefix(fin);
    if rewound {
        assert_eq!(
            *events, rewind_turn,
            "{label}: the rewound history seen at the fault is the final one's start"
        );
    }
    if let Some(written) = tear.torn.lock().unwrap().as_ref() {
        if !rewound {
            // Torn before its commit: the retry (or the new worker) wrote the rewind again,
            // from the same failed history.
            assert_eq!(
                kinds(written),
                kinds(&rewind_turn),
                "{label}: the rewind written again is the same"
            );
        }
    }
    assert!(last.pending_outbox.is_empty(), "{label}: outbox left");
    let stolen = *tear.stolen.lock().unwrap();
    if let Some((_, taken)) = stolen {
        let lease = partition_row(inner.as_ref(), 0).await;
        assert!(
            lease.epoch > taken && lease.owner.as_deref() == Some(worker.name()),
            "{label}: the worker took the lease back from the thief: {lease:?}"
        );
    }
    let letters = client.list_dead_letters(None, 10).await.unwrap();
    assert!(letters.is_empty(), "{label}: dead letters: {letters:?}");
    eprintln!(
        "{label}: at the fault {} ({} events, {} pending); Pay ran {pay} times; {:?}",
        if rewound { "rewound" } else { "failed" },
        events.len(),
        at_fault.pending_outbox.len(),
        worker.stats()
    );
    advancing.abort();
    worker.shutdown().await;
}

/// The rewind's checkpoint fails, or lands with its answer lost, and each of `thens` goes on.
async fn failed_or_answer_lost(kind: Backend, thens: &[Then]) {
    for fault in [Fault::Failed, Fault::AnswerLost] {
        for &then in thens {
            rewind_under(kind, fault, then).await;
        }
    }
}

/// Torn after each step with the same worker going on, then after `new_worker_after` with a
/// new worker taking over.
async fn torn_after_each_step(kind: Backend, new_worker_after: CheckpointStep) {
    for step in CheckpointStep::ALL {
        rewind_under(kind, Fault::TornAfter(step), Then::SameWorker).await;
    }
    rewind_under(kind, Fault::TornAfter(new_worker_after), Then::NewWorker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_rewind_torn_after_each_step_then_the_same_worker_goes_on() {
    for step in CheckpointStep::ALL {
        rewind_under(Backend::Memory, Fault::TornAfter(step), Then::SameWorker).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_rewind_torn_after_each_step_then_a_new_worker_takes_over() {
    for step in CheckpointStep::ALL {
        rewind_under(Backend::Memory, Fault::TornAfter(step), Then::NewWorker).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_rewind_checkpoint_failed_or_answer_lost() {
    failed_or_answer_lost(Backend::Memory, &[Then::SameWorker, Then::NewWorker]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rewind_checkpoint_failed_or_answer_lost() {
    failed_or_answer_lost(Backend::Sqlite, &[Then::SameWorker, Then::NewWorker]).await;
}

/// SQLite's checkpoint is one transaction: asked to tear the rewind's after any step, it has
/// no step to stop at, commits whole, and the instance is rewound and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rewind_is_never_torn() {
    for step in [
        CheckpointStep::Validated,
        CheckpointStep::HistoryCommitted,
        CheckpointStep::OutboundSent,
    ] {
        let label = format!("Sqlite, tear asked after {step:?}");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
        let dir = TempDir::new("rewind-faults");
        let inner = backend(Backend::Sqlite, &clock, &dir).await;
        let tear = Arc::new(TearRewind::new(Some(step), None));
        let store = Arc::new(
            FaultyStore::new(inner.clone(), clock.clone(), FaultPlan::none())
                .observe_steps(tear.clone()),
        );
        let hub = TaskHub::open_with_clock(store, settings(), clock.clone())
            .await
            .unwrap();
        let probe = Arc::new(Probe::default());
        let worker = Worker::start(&hub, registry(&probe)).await.unwrap();
        let client = hub.client();
        let id = client.start("Order", INPUT).await.unwrap();
        assert_eq!(
            finished(&client, &id, &label).await.status(),
            OrchestrationStatus::Failed
        );
        probe.healed.store(true, Ordering::SeqCst);
        client.rewind(&id, None).await.unwrap();
        // The clock stands still: the rewind and the payment go by wake-ups.
        let done = finished(&client, &id, &label).await;
        assert_eq!(done.output::<u64>().unwrap(), Some(OUTPUT), "{label}");
        assert!(tear.torn.lock().unwrap().is_none(), "{label}: torn");
        assert_eq!(
            tear.rewinds.load(Ordering::SeqCst),
            0,
            "{label}: a transactional checkpoint has no steps to observe"
        );
        assert_eq!(
            (
                probe.charge.load(Ordering::SeqCst),
                probe.pay.load(Ordering::SeqCst)
            ),
            (1, 2),
            "{label}"
        );
        worker.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_rewind_torn_after_each_step() {
    torn_after_each_step(Backend::Azure, CheckpointStep::OutboundSent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_rewind_checkpoint_failed_or_answer_lost() {
    failed_or_answer_lost(Backend::Azure, &[Then::SameWorker]).await;
}

/// PostgreSQL runs the steps inside one transaction: stopped after any step before its commit,
/// the rewind leaves the failed history; after the last, the rewound one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rewind_stopped_after_each_step() {
    torn_after_each_step(Backend::Postgres, CheckpointStep::HistoryCommitted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rewind_checkpoint_failed_or_answer_lost() {
    failed_or_answer_lost(Backend::Postgres, &[Then::SameWorker]).await;
}

/// The lease is taken away while the rewind's checkpoint is on its way: refused by the fence,
/// it changes nothing, and the worker rewinds the instance once it holds the partition again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_rewind_under_a_lost_lease_is_fenced() {
    rewind_under(Backend::Memory, Fault::Fenced, Then::SameWorker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_rewind_under_a_lost_lease_is_fenced() {
    rewind_under(Backend::Azure, Fault::Fenced, Then::SameWorker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rewind_under_a_lost_lease_is_fenced() {
    rewind_under(Backend::Postgres, Fault::Fenced, Then::SameWorker).await;
}
