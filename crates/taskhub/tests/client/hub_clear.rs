//! `TaskHubClient::clear_hub` with a worker running: a turn in flight on an instance that the
//! clear removed fails its checkpoint (`Conflict`: the history or row ETag it read is gone)
//! and does not bring the instance back, neither whole nor half (a history without a row, a
//! row Running for ever); the same ID then starts over with its new input.
//!
//! The turn is held before its checkpoint (a delay of the fault plan: on SQLite, whose
//! checkpoint is one transaction, and on memory) or, on the ordered checkpoint of the
//! backends without transactions (memory; Azure Storage under
//! `scripts/with-azurite.sh cargo test -p taskhub --test client hub_clear::`), after its
//! history was committed and before its row is written.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backends;
use crate::common;
use crate::common::wait_done;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, Op, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, StepObserver, StorageResult, SystemClock, TaskHubStore,
};

const BOUND: Duration = Duration::from_secs(60);

/// Where the turn is held while the hub is cleared.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Before its checkpoint starts (a delay of the fault plan, this long).
    BeforeCheckpoint(Duration),
    /// After this step of the ordered checkpoint, until released.
    AfterStep(CheckpointStep),
}

/// Holds a worker's turn (a fenced checkpoint with history) after `step` while armed, until
/// released.
struct HoldTurn {
    step: CheckpointStep,
    armed: AtomicBool,
    held: AtomicBool,
    release: AtomicBool,
}

impl StepObserver for HoldTurn {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        let turn = request.fence.is_some() && request.history.is_some();
        if step == self.step && turn && self.armed.swap(false, Ordering::SeqCst) {
            self.held.store(true, Ordering::SeqCst);
            let started = Instant::now();
            // Blocks this runtime thread only; the test runs on the others.
            while !self.release.load(Ordering::SeqCst) && started.elapsed() < BOUND {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Waits", |ctx: OrchestrationContext, (): ()| async move {
        let v: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    reg.orchestration("Echo", |_ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(x)
    });
    reg
}

async fn a_turn_in_flight_does_not_bring_a_cleared_instance_back(
    inner: Arc<dyn TaskHubStore>,
    hold: Hold,
) {
    let step = match hold {
        Hold::AfterStep(s) => s,
        Hold::BeforeCheckpoint(_) => CheckpointStep::Validated,
    };
    let observer = Arc::new(HoldTurn {
        step,
        armed: AtomicBool::new(false),
        held: AtomicBool::new(false),
        release: AtomicBool::new(false),
    });
    let store = Arc::new(
        FaultyStore::new(inner, Arc::new(SystemClock::new()), FaultPlan::none())
            .observe_steps(observer.clone()),
    );
    let hub = TaskHub::open(store.clone(), backends::settings(backends::Backend::Sqlite))
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = InstanceId::new("wiped").unwrap();
    let options = || StartOptions {
        instance_id: Some(id.clone()),
        ..StartOptions::default()
    };
    client.start_with("Waits", (), options()).await.unwrap();
    common::wait::until_async(
        "the instance waits for its event",
        || async {
            client
                .get_status(&id, StatusOptions::default())
                .await
                .unwrap()
                .is_some_and(|s| s.status() == OrchestrationStatus::Running)
        },
        || async {},
    )
    .await;

    // The turn that takes the event is held; the hub is cleared meanwhile.
    match hold {
        Hold::BeforeCheckpoint(by) => store
            .faults()
            .set_plan(FaultPlan::none().delay(Trigger::nth_of(Op::Checkpoint, 1), by)),
        Hold::AfterStep(_) => observer.armed.store(true, Ordering::SeqCst),
    }
    let conflicts_before = worker.stats().checkpoint_conflicts;
    client.raise_event(&id, "go", &7u64).await.unwrap();
    common::wait::until(
        "the turn is held",
        || match hold {
            Hold::BeforeCheckpoint(_) => !store.faults().injected().is_empty(),
            Hold::AfterStep(_) => observer.held.load(Ordering::SeqCst),
        },
        || store.faults().injected(),
    )
    .await;
    let cleared = client.clear_hub().await.unwrap();
    assert_eq!(cleared.instances, 1, "{cleared:?}");
    assert_eq!(
        worker.stats().checkpoint_conflicts,
        conflicts_before,
        "the held turn has not committed yet"
    );
    observer.release.store(true, Ordering::SeqCst);

    // The held turn fails its checkpoint: a conflict, and nothing of the instance comes back.
    common::wait::until(
        "the held turn's checkpoint fails",
        || worker.stats().checkpoint_conflicts > conflicts_before,
        || worker.stats(),
    )
    .await;
    // Long enough for a redelivery of the turn's messages (none: the clear removed them).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(hub.store().get_instance(&id).await.unwrap(), None);
    assert_eq!(hub.store().load_history(&id).await.unwrap(), None);
    assert!(client
        .get_status(&id, StatusOptions::default())
        .await
        .unwrap()
        .is_none());

    // The ID starts over: the new instance runs with its own input.
    client.start_with("Echo", 42u64, options()).await.unwrap();
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    assert_eq!(done.row.name, "Echo");
    worker.shutdown().await;
}

fn memory() -> Arc<dyn TaskHubStore> {
    Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_turn_held_before_its_checkpoint() {
    let dir = common::TempDir::new("hub-clear");
    a_turn_in_flight_does_not_bring_a_cleared_instance_back(
        common::sqlite_store(&dir.0),
        Hold::BeforeCheckpoint(Duration::from_secs(2)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_turn_held_before_its_checkpoint() {
    a_turn_in_flight_does_not_bring_a_cleared_instance_back(
        memory(),
        Hold::BeforeCheckpoint(Duration::from_secs(2)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_turn_held_after_its_history_commit() {
    a_turn_in_flight_does_not_bring_a_cleared_instance_back(
        memory(),
        Hold::AfterStep(CheckpointStep::HistoryCommitted),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn azure_turn_held_after_its_history_commit() {
    a_turn_in_flight_does_not_bring_a_cleared_instance_back(
        backends::azure_store(&backends::unique_hub_name()).await,
        Hold::AfterStep(CheckpointStep::HistoryCommitted),
    )
    .await;
}
