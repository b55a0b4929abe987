//! A client start races the worker for the instance row (issue 20, item 1).
//!
//! On a backend without transactions a client's start is an ordered checkpoint with no
//! history: it sends `ExecutionStarted` (step 2) before it writes the Pending row (step 3). A
//! worker that takes the message in between sees the row of the previous, finished execution.
//! It must not throw the start away (the instance would then stay Pending for ever although
//! the client was told it started): the start waits for its row, uncounted, and runs once the
//! row has landed.
//!
//! The client's checkpoint is held for 2 s after its messages are sent (a step observer on the
//! shared ordered driver) while the worker polls, for a restart of a completed instance, for
//! a `TerminateActive` start over a running one, and for one over a Pending one whose start is
//! scheduled later (its terminate waits for that start, so the new start is judged alone while
//! the row still shows the old execution). On the memory backend (the same ordered driver
//! as Azure) and on Azure Storage (Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub --test client start_row_race::`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backends;
use crate::common;
use crate::common::wait_done;
use taskhub::*;
use taskhub_storage::faults::FaultPlan;
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, Clock, StepObserver, StorageResult, SystemClock,
    TaskHubStore,
};

/// How long the client's checkpoint is held between its send and its row write.
const HOLD: Duration = Duration::from_secs(2);
const BOUND: Duration = Duration::from_secs(60);

/// Holds a client start's checkpoint (no lease, no history, a Pending row) after its
/// messages are sent, while armed.
#[derive(Default)]
struct HoldClientStart {
    armed: AtomicBool,
    held: AtomicU32,
}

impl StepObserver for HoldClientStart {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        let client_start = request.fence.is_none()
            && request.history.is_none()
            && request
                .instance
                .as_ref()
                .is_some_and(|(row, _)| row.status == OrchestrationStatus::Pending);
        if step == CheckpointStep::OutboundSent && client_start && self.armed.load(Ordering::SeqCst)
        {
            self.held.fetch_add(1, Ordering::SeqCst);
            // Blocks this runtime thread only; the worker runs on the others.
            std::thread::sleep(HOLD);
        }
        Ok(())
    }
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_ctx: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration("Twice", |ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(ctx.call_activity::<_, u64>("Double", x).await?)
    });
    reg.orchestration("Waits", |ctx: OrchestrationContext, (): ()| async move {
        let v: u64 = ctx.wait_for_event("never").await?;
        Ok::<_, OrchestrationError>(v)
    });
    reg
}

async fn restarts_are_not_lost(inner: Arc<dyn TaskHubStore>) {
    restarts_are_not_lost_on(inner, Arc::new(SystemClock::new())).await;
}

/// As above, with `clock` as the hub's (the worker's) clock.
async fn restarts_are_not_lost_on(inner: Arc<dyn TaskHubStore>, clock: Arc<dyn Clock>) {
    let hold = Arc::new(HoldClientStart::default());
    let store = FaultyStore::new(inner, Arc::new(SystemClock::new()), FaultPlan::none())
        .observe_steps(hold.clone());
    let hub = TaskHub::open_with_clock(
        Arc::new(store),
        backends::settings(backends::Backend::Azure),
        clock,
    )
    .await
    .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();

    // A restart of a completed instance, the client held between its send and its row.
    let id = InstanceId::new("restarted").unwrap();
    let options = StartOptions {
        instance_id: Some(id.clone()),
        ..StartOptions::default()
    };
    client.start_with("Twice", 21u64, options).await.unwrap();
    let first = wait_done(&client, &id, BOUND).await;
    assert_eq!(first.output::<u64>().unwrap(), Some(42));
    hold.armed.store(true, Ordering::SeqCst);
    client.restart(&id, false).await.unwrap();
    hold.armed.store(false, Ordering::SeqCst);
    assert_eq!(hold.held.load(Ordering::SeqCst), 1, "the restart was held");
    let again = client
        .wait_for_completion(&id, BOUND)
        .await
        .unwrap_or_else(|e| panic!("the restart never ran: {e}"));
    assert_eq!(again.status(), OrchestrationStatus::Completed);
    assert_ne!(
        again.row.execution_id, first.row.execution_id,
        "a new execution ran"
    );

    // A TerminateActive start over a running instance, held the same way.
    let busy = InstanceId::new("replaced").unwrap();
    let options = StartOptions {
        instance_id: Some(busy.clone()),
        ..StartOptions::default()
    };
    client.start_with("Waits", (), options).await.unwrap();
    common::wait::until_async(
        "the waiting instance runs",
        || {
            let c = client.clone();
            let busy = busy.clone();
            async move {
                c.get_status(&busy, StatusOptions::default())
                    .await
                    .unwrap()
                    .is_some_and(|s| s.status() == OrchestrationStatus::Running)
            }
        },
        || async { "not Running" },
    )
    .await;
    replace_while_held(&client, &hold, &busy, 5).await;
    // Held at least once (a retry after the terminate's turn moved the row is held again).
    assert!(
        hold.held.load(Ordering::SeqCst) >= 2,
        "the replacing start was held"
    );
    let replaced = client
        .wait_for_completion(&busy, BOUND)
        .await
        .unwrap_or_else(|e| panic!("the replacing start never ran: {e}"));
    assert_eq!(replaced.status(), OrchestrationStatus::Completed);
    assert_eq!(replaced.output::<u64>().unwrap(), Some(10));

    // A TerminateActive start over an instance whose own start is scheduled later (Pending):
    // its terminate waits for that start, so nothing writes the row, the client's row write
    // lands, and the new start, taken alone while the row still shows the Pending execution,
    // must wait for it (it was consumed, the instance then Pending for ever).
    let later = InstanceId::new("scheduled-then-replaced").unwrap();
    let options = StartOptions {
        instance_id: Some(later.clone()),
        start_at: Some(std::time::SystemTime::now() + Duration::from_secs(3600)),
        ..StartOptions::default()
    };
    client.start_with("Twice", 1u64, options).await.unwrap();
    let held = hold.held.load(Ordering::SeqCst);
    replace_while_held(&client, &hold, &later, 7).await;
    assert_eq!(
        hold.held.load(Ordering::SeqCst),
        held + 1,
        "the replacing start was held once (its row write raced nothing)"
    );
    let replaced = client
        .wait_for_completion(&later, BOUND)
        .await
        .unwrap_or_else(|e| panic!("the start replacing a scheduled one never ran: {e}"));
    assert_eq!(replaced.status(), OrchestrationStatus::Completed);
    assert_eq!(replaced.output::<u64>().unwrap(), Some(14));
    worker.shutdown().await;
}

/// Starts `Twice(input)` as `id`, replacing (`TerminateActive`) what runs there, while `hold`
/// holds the client's row writes.
async fn replace_while_held(
    client: &TaskHubClient,
    hold: &HoldClientStart,
    id: &InstanceId,
    input: u64,
) {
    hold.armed.store(true, Ordering::SeqCst);
    let options = StartOptions {
        instance_id: Some(id.clone()),
        reuse: ReusePolicy::TerminateActive,
        ..StartOptions::default()
    };
    client.start_with("Twice", input, options).await.unwrap();
    hold.armed.store(false, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restart_whose_row_lands_late_runs_in_memory() {
    restarts_are_not_lost(Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))).await;
}

/// The wait for the row is timed by the worker's own clock from its first sighting of the
/// start, never by the store's enqueue time against the worker's wall clock: a worker whose
/// wall clock runs 10 minutes ahead of the store's must not refuse the start at first sight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_whose_clock_runs_ahead_still_waits_for_the_row() {
    restarts_are_not_lost_on(
        Arc::new(MemoryStore::new(Arc::new(SystemClock::new()))),
        Arc::new(common::skewed_clock::SkewedClock::new(600_000)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restart_whose_row_lands_late_runs_on_azure() {
    restarts_are_not_lost(backends::azure_store(&backends::unique_hub_name()).await).await;
}
