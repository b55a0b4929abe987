//! A checkpoint rejected as fenced stops the worker's processing of that partition at once
//! (`worker/orchestration`), but the lease may still be this worker's: on Azure a re-homed instance's
//! history sentinel named another partition's higher epoch (found by `azure_resize.rs`), and
//! any backend may answer `Fenced` for a reason the lease row does not confirm. The lease
//! manager then finds the row still its own under the same epoch and must process the
//! partition again; before, it kept renewing a partition nobody processed and its instances
//! never finished.

use std::time::Duration;

use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, Op, Trigger};
use taskhub_storage::StorageError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_fenced_while_its_lease_stays_held_is_processed_again() {
    // The clock never moves: no renewal, expiry or idle back-off comes due, so only the
    // lease check the fenced checkpoint asks for can bring the partition back.
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let ManualMemoryHub { store, hub, .. } = manual_memory_hub(settings).await;
    let mut reg = Registry::new();
    reg.orchestration("Echo", |_ctx: OrchestrationContext, x: u64| async move {
        Ok::<_, OrchestrationError>(x + 1)
    });
    let client = hub.client();
    let id = client.start("Echo", 41u64).await.unwrap();
    // The worker's first checkpoint (the instance's first turn) is answered Fenced, although
    // nobody took the partition.
    store.faults().set_plan(FaultPlan::none().fail(
        Trigger::nth_of(Op::Checkpoint, 1),
        StorageError::Fenced {
            partition: 0,
            attempted: 1,
            current: 2,
        },
    ));
    let worker = Worker::start(&hub, reg).await.unwrap();
    let what = "the partition is processed again while its lease is still held";
    let done = completes_within(&client, &id, Duration::from_secs(30), what).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    assert_eq!(
        store.faults().injected().len(),
        1,
        "the fenced answer was given"
    );
    assert_eq!(
        worker.stats().checkpoint_conflicts,
        1,
        "one checkpoint was rejected"
    );
    worker.shutdown().await;
}
