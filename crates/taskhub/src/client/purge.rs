//! Purging finished instances: history, payloads and the instance row.

use taskhub_core::InstanceId;
use taskhub_storage::InstanceQuery;

use super::prestart::Outcome;
use super::TaskHubClient;
use crate::error::TaskhubError;

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
            return Err(TaskhubError::WrongStatus {
                instance_id: instance_id.clone(),
                status: row.status,
                operation: "purge",
            });
        }
        store.delete_history(instance_id).await?;
        store.delete_payloads(instance_id).await?;
        Ok(store.delete_instance(instance_id).await?)
    }

    /// Purges every finished instance matching `query` (its status filter is narrowed to
    /// finished statuses). Returns how many were purged.
    ///
    /// # Errors
    /// A storage error.
    pub async fn purge_where(&self, query: &InstanceQuery) -> Result<u64, TaskhubError> {
        let mut q = query.clone();
        q.continuation = None;
        let mut purged = 0;
        loop {
            let page = self.hub.store().list_instances(&q).await?;
            for row in page.instances.iter().filter(|r| r.status.is_terminal()) {
                if self.purge(&row.instance_id).await? {
                    purged += 1;
                }
            }
            match page.continuation {
                Some(c) => q.continuation = Some(c),
                None => return Ok(purged),
            }
        }
    }
}
