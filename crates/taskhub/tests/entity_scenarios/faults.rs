//! Entities keep exactly-once state updates when checkpoints are torn after each step of the
//! ordered checkpoint (the memory backend has no transactions, so an entity batch that sends
//! messages commits in two steps, see `worker/entity`) and under seeded random storage faults:
//! every operation — signalled by the client, relayed by another entity, or called by an
//! orchestration — changes the state once, and every call gets its answer.

use std::sync::Arc;

use crate::faults_suite::run;
use taskhub_storage::faults::{FaultPlan, TearAfter};
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{StorageError, SystemClock, TaskHubStore};

fn memory() -> Arc<dyn TaskHubStore> {
    Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_checkpoints_torn_after_each_step_apply_each_operation_once() {
    for step in TearAfter::ALL {
        let plan = (0..15u64).fold(FaultPlan::none(), |plan, k| {
            plan.tear_checkpoint(1 + 3 * k, step)
        });
        run(memory(), plan, &format!("torn after step {}", step.step())).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_under_seeded_faults_apply_each_operation_once() {
    for seed in 1..=3 {
        let plan = FaultPlan::none()
            .random(seed, 0.03, StorageError::Unavailable("injected".into()))
            .random_tears(0.15);
        run(memory(), plan, &format!("seed {seed}")).await;
    }
}
