//! Activities that are not in the worker's registry, run by its remote executor: the work item
//! stays hidden while the executor runs it (renewed as a long Rust activity's is), and its
//! outcome is recorded exactly as a Rust activity's result. When the executor cannot answer,
//! the work item goes back (see [`give_back`]).

use std::sync::Arc;

use taskhub_storage::{Dequeued, QueueName, QueueStore};
use tracing::warn;

use super::result_commit::WorkItemHold;
use crate::executor::{ActivityOutcome, ActivityWork, ExecutorError, RemoteExecutor};
use crate::hub::TaskHub;
use crate::worker::shared::executor_errors::{counts_as_failed_delivery, retry_delay};
use crate::worker::shared::lifecycle::Lifecycle;
use crate::worker::shared::Shared;

/// The executor that runs activity `name` on this worker, if the registry does not have it.
pub(crate) fn executor_for(shared: &Shared, name: &str) -> Option<Arc<dyn RemoteExecutor>> {
    if shared.registry.has_activity(name) {
        return None;
    }
    shared.executor.clone()
}

/// Runs `work` in `executor`, renewing the work item's visibility meanwhile. If the worker is
/// abandoned (a timed-out shutdown aborts this task), the executor's future is dropped with
/// it, withdrawing the work.
pub(crate) async fn run(
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    executor: &dyn RemoteExecutor,
    work: ActivityWork,
    hold: &mut WorkItemHold,
) -> Result<ActivityOutcome, ExecutorError> {
    // Renewed as a Rust activity's is.
    hold.renewing(hub, lifecycle, executor.run_activity(work))
        .await
}

/// Returns a work item the executor could not run to its queue after a short delay: counted
/// as a failed delivery unless no worker was connected (the rule of orchestration turns, see
/// `worker/orchestration/remote.rs`); a work item delivered too often is dead-lettered at its next
/// dequeue, as any other.
pub(crate) async fn give_back(
    queues: &dyn QueueStore,
    m: &Dequeued,
    receipt: &taskhub_storage::Receipt,
    e: &ExecutorError,
) {
    warn!(error = %e, "the executor did not run an activity; it will be retried");
    let queue = QueueName::WorkItems;
    let result = if counts_as_failed_delivery(e) {
        queues.abandon(queue, receipt, retry_delay(e)).await
    } else {
        queues.release(queue, receipt, retry_delay(e)).await
    };
    if let Err(e) = result {
        warn!(error = %e, dequeue_count = m.dequeue_count, "could not give a work item back; it reappears after its visibility timeout");
    }
}
