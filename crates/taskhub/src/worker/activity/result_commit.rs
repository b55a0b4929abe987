//! Committing an activity's result (the reply message and the work item's delete, in one
//! checkpoint), retried with back-off on the `Clock` while storage fails transiently. The
//! work item stays hidden meanwhile (its visibility is renewed as while the activity ran), so
//! a transient error never makes the activity run again (invariant 3). It gives up only on an
//! error that is not retryable.

use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, OutboundMessage, QueueName, Receipt, StorageError,
};
use tracing::warn;

use crate::hub::TaskHub;
use crate::retries;
use crate::worker::shared::lifecycle::Lifecycle;

/// A running work item's delivery: its current receipt and when its visibility was last set.
pub(crate) struct WorkItemHold {
    /// The in-flight entry (so a timed-out shutdown can give the item back).
    pub flight: u64,
    /// The current receipt (renewals replace it).
    pub receipt: Receipt,
    /// Monotonic time of the dequeue or last renewal.
    pub renewed_at: Duration,
}

impl WorkItemHold {
    /// How long until the work item's next renewal while its activity runs: half `visibility`
    /// after the last renewal; after a failed renewal, a tenth of it later (not at once).
    pub(crate) fn next_renewal(&self, hub: &TaskHub, visibility: Duration) -> Duration {
        let now = hub.clock().monotonic();
        (self.renewed_at + visibility / 2)
            .saturating_sub(now)
            .max(visibility / 10)
    }

    /// Pushes the work item's visibility out again if half of it has passed.
    pub(crate) async fn renew_if_due(&mut self, hub: &TaskHub, lifecycle: &Lifecycle) {
        let clock = hub.clock();
        let visibility = hub.settings().work_item_visibility_timeout;
        let now = clock.monotonic();
        if now.saturating_sub(self.renewed_at) < visibility / 2 {
            return;
        }
        self.renew(hub, lifecycle).await;
    }

    /// Pushes the work item's visibility out to a full timeout from now.
    pub(crate) async fn renew(&mut self, hub: &TaskHub, lifecycle: &Lifecycle) {
        let visibility = hub.settings().work_item_visibility_timeout;
        let queue = QueueName::WorkItems;
        match hub.store().extend(queue, &self.receipt, visibility).await {
            Ok(r) => {
                self.renewed_at = hub.clock().monotonic();
                self.receipt = r.clone();
                lifecycle.renewed(self.flight, queue, r);
            }
            Err(e) => warn!(error = %e, "could not extend the work item's visibility"),
        }
    }

    /// Awaits `work`, renewing the work item's visibility meanwhile (at
    /// [`next_renewal`](Self::next_renewal)), and returns its output.
    pub(crate) async fn renewing<T>(
        &mut self,
        hub: &TaskHub,
        lifecycle: &Lifecycle,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let visibility = hub.settings().work_item_visibility_timeout;
        tokio::pin!(work);
        loop {
            let renew = hub.clock().sleep(self.next_renewal(hub, visibility));
            tokio::select! {
                out = &mut work => return out,
                () = renew => self.renew(hub, lifecycle).await,
            }
        }
    }
}

/// Commits `reply` and the work item's delete, retrying retryable errors (with growing waits
/// on the hub's clock, renewing the work item meanwhile) until it succeeds or fails for good.
pub(crate) async fn commit(
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    instance: &InstanceId,
    reply: OutboundMessage,
    hold: &mut WorkItemHold,
) -> Result<CheckpointOutcome, StorageError> {
    let clock = hub.clock();
    let started = clock.monotonic();
    let mut waits = retries::ACTIVITY_RESULT.waits();
    loop {
        let request = CheckpointRequest {
            instance_id: instance.clone(),
            fence: None,
            history: None,
            instance: None,
            outbound: vec![reply.clone()],
            consumed: vec![(QueueName::WorkItems, hold.receipt.clone())],
        };
        match hub.store().checkpoint(request).await {
            Err(e) if e.is_retryable() => {
                let Some(wait) = waits.next_retry(clock.monotonic().saturating_sub(started)) else {
                    return Err(e);
                };
                warn!(error = %e, %instance, "could not commit an activity result; retrying");
                clock.sleep(wait).await;
                hold.renew_if_due(hub, lifecycle).await;
            }
            other => return other,
        }
    }
}
