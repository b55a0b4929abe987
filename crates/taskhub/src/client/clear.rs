//! Emptying the task hub in place: every instance goes, the hub and its workers stay.

use taskhub_storage::Cleared;
use tracing::info;

use super::TaskHubClient;
use crate::error::TaskhubError;

impl TaskHubClient {
    /// Empties the task hub: removes every instance row (orchestrations and entities), every
    /// history, every queued message (control queues and the work-item queue, pending timers
    /// and scheduled starts with them), every large payload and every dead letter. The hub's
    /// storage, its metadata and its partitions stay, leases and epochs untouched, so the
    /// workers serving it (in this process or others) carry on and the hub is usable at once:
    /// a new start, even under an instance ID used before, runs normally.
    ///
    /// Not atomic with other calls: a start, signal or turn racing the clear may survive it
    /// (a turn in flight on an instance that was removed fails its checkpoint's ETag check and
    /// does not bring the instance back; one that was starting the instance may create it
    /// again, whole). To remove the storage itself, stop every worker of the hub and run
    /// `taskhub hub delete`.
    ///
    /// # Errors
    /// A storage error; part of the hub may have been emptied then (call again).
    pub async fn clear_hub(&self) -> Result<Cleared, TaskhubError> {
        let cleared = self.hub.store().clear_hub().await?;
        info!(
            instances = cleared.instances,
            histories = cleared.histories,
            messages = cleared.messages,
            payloads = cleared.payloads,
            dead_letters = cleared.dead_letters,
            "task hub cleared"
        );
        Ok(cleared)
    }
}
