//! Purging finished instances: history, payloads and the instance row.

use taskhub_core::{InstanceId, OrchestrationStatus};
use taskhub_storage::InstanceQuery;

use std::time::Duration;

use super::prestart::Outcome;
use super::TaskHubClient;
use crate::error::TaskhubError;

/// What a purge with a time budget did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeOutcome {
    /// Instances purged by this call.
    pub purged: u64,
    /// True if no matching finished instance is left; false if the budget ran out first
    /// (call again to go on).
    pub finished: bool,
}

impl TaskHubClient {
    /// Deletes a finished instance's history, large payloads and row. Returns false if it did
    /// not exist. A Pending instance whose start is scheduled in the future is purged at once
    /// too, and never runs.
    ///
    /// # Errors
    /// `WrongStatus` if the instance is still active, or a storage error.
    pub async fn purge(&self, instance_id: &InstanceId) -> Result<bool, TaskhubError> {
        let store = self.hub.store();
        let row = match self.purge_before_start(instance_id).await {
            Ok(Outcome::Done) => return Ok(true),
            Ok(Outcome::NotWaiting(row)) => *row,
            Err(TaskhubError::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        if !row.status.is_terminal() {
            return Err(TaskhubError::wrong_status(instance_id, row.status, "purge"));
        }
        store.delete_history(instance_id).await?;
        store.delete_payloads(instance_id).await?;
        Ok(store.delete_instance(instance_id).await?)
    }

    /// Purges every finished instance matching `query` (active ones are skipped). Returns how
    /// many were purged.
    ///
    /// # Errors
    /// A storage error.
    pub async fn purge_where(&self, query: &InstanceQuery) -> Result<u64, TaskhubError> {
        Ok(self.purge_where_within(query, Duration::MAX).await?.purged)
    }

    /// Purges finished instances matching `query` (active ones are skipped, also one restarted
    /// after it was listed; only the query's finished statuses are listed) until they are all
    /// gone or `budget` has passed on the hub's clock, whichever comes first; at least one is
    /// purged per call if any is left, so calling again until [`PurgeOutcome::finished`]
    /// always ends. For a purge that must not hold a caller (a request handler, a scheduled
    /// clean-up) longer than it may.
    ///
    /// # Errors
    /// A storage error.
    pub async fn purge_where_within(
        &self,
        query: &InstanceQuery,
        budget: Duration,
    ) -> Result<PurgeOutcome, TaskhubError> {
        let clock = self.hub.clock();
        let started = clock.monotonic();
        let mut q = query.clone();
        q.continuation = None;
        // Only finished rows are listed (the store filters them), so a filter matching many
        // active instances does not scan them all before the budget is looked at.
        q.statuses = finished_statuses(&query.statuses);
        let mut purged = 0;
        if q.statuses.is_empty() {
            return Ok(PurgeOutcome {
                purged,
                finished: true,
            });
        }
        loop {
            let page = self.hub.store().list_instances(&q).await?;
            for row in page.instances.iter().filter(|r| r.status.is_terminal()) {
                if purged > 0 && clock.monotonic().saturating_sub(started) >= budget {
                    return Ok(PurgeOutcome {
                        purged,
                        finished: false,
                    });
                }
                match self.purge(&row.instance_id).await {
                    Ok(true) => purged += 1,
                    Ok(false) => {}
                    // Restarted since it was listed: active now, and not for this purge.
                    Err(TaskhubError::WrongStatus { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            match page.continuation {
                Some(c) => q.continuation = Some(c),
                None => {
                    return Ok(PurgeOutcome {
                        purged,
                        finished: true,
                    })
                }
            }
        }
    }
}

/// The finished statuses among `wanted` (every finished status if `wanted` is empty).
fn finished_statuses(wanted: &[OrchestrationStatus]) -> Vec<OrchestrationStatus> {
    use OrchestrationStatus::{Completed, Failed, Terminated};
    if wanted.is_empty() {
        return vec![Completed, Failed, Terminated];
    }
    wanted.iter().copied().filter(|s| s.is_terminal()).collect()
}
