//! An activity result whose commit meets transient storage errors is retried while the work
//! item stays hidden (issue 10, invariant 3): the activity runs once, and the orchestration
//! completes without waiting for the work item's visibility timeout. The result is handed to
//! its session in process; the turn's commit fails, the result falls back to the control queue
//! and that commit keeps failing, for more than twice the visibility timeout. The activity
//! ends close to its first renewal, so the fall-back must renew from the work item's real
//! last renewal, not from when the fall-back began.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::registries::add_call;
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, Op, Trigger};
use taskhub_storage::StorageError;

/// Failed commits: the turn's (4) and the fall-back's; with back-off they span more than twice
/// the visibility timeout.
const FAILURES: u64 = 16;
const VISIBILITY: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_commit_failing_transiently_is_retried_and_the_activity_runs_once() {
    let settings = Settings {
        partition_count: 1,
        work_item_visibility_timeout: VISIBILITY,
        ..fast_settings()
    };
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(settings).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut reg = Registry::new();
    {
        let store = store.clone();
        let runs = runs.clone();
        reg.activity("Double", move |_ctx: ActivityContext, x: u64| {
            let store = store.clone();
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    // From here on, the next checkpoints (this result's) fail transiently.
                    let mut plan = FaultPlan::none();
                    for n in 1..=FAILURES {
                        plan = plan.fail(
                            Trigger::nth_of(Op::Checkpoint, n),
                            StorageError::Unavailable("injected".into()),
                        );
                    }
                    store.faults().set_plan(plan);
                    // About 4.5 s of the clock (it runs ten times real speed): close to the
                    // first renewal, at half the visibility timeout.
                    tokio::time::sleep(Duration::from_millis(450)).await;
                }
                Ok::<_, ActivityError>(x * 2)
            }
        });
    }
    add_call(&mut reg, "Once", "Double");
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("Once", 21u64).await.unwrap();

    // Time moves on (ten times real speed) so back-off waits and renewals come due.
    let advancing = keep_advancing_by(&clock, Duration::from_millis(5), Duration::from_millis(50));
    let what = "completes without waiting for a redelivery";
    let done = completes_within(&client, &id, Duration::from_secs(30), what).await;
    advancing.abort();
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the activity ran once");
    let failed = store
        .faults()
        .injected()
        .iter()
        .filter(|i| i.op == Op::Checkpoint)
        .count();
    assert_eq!(failed as u64, FAILURES, "every planned failure was met");
    assert_eq!(worker.stats().activities, 1);
    worker.shutdown().await;
}
