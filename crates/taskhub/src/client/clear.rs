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
    /// Meant for a hub at rest: not atomic with other calls, so work under way may survive it.
    /// A turn in flight on an instance that was removed fails its checkpoint's ETag check and
    /// does not bring the instance back; but a start sent meanwhile, a turn that was starting
    /// an instance, and the messages workers had already fetched into their buffers and not yet
    /// run are processed after the clear (a start among them creates its instance again,
    /// whole; an event or an activity result may reach a new instance of the same ID). To
    /// remove the storage itself, stop every worker of the hub and run `taskhub hub delete`.
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
