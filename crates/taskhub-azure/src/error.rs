//! The crate's error type: bad configuration. Storage failures are the seam's
//! [`StorageError`](taskhub_storage::StorageError).

/// What can go wrong before the store talks to Azure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AzureError {
    /// The connection string could not be understood.
    #[error("invalid azure_storage_connection_string: {0}")]
    ConnectionString(String),
    /// The task hub name breaks the naming rule.
    #[error("invalid task_hub_name '{name}': {reason}")]
    HubName {
        /// The name given.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// [`AzureStore::open`](crate::AzureStore::open) found no such hub on the account (its
    /// blob container, the last object a hub's creation makes, is missing). Nothing was
    /// created.
    #[error("no task hub '{name}' on this storage account (task_hub_name): it is created by a worker (`taskhub worker --backend azure`); check task_hub_name and azure_storage_connection_string")]
    HubNotFound {
        /// The hub name given.
        name: String,
    },
    /// A hub whose name differs only in case exists on the account: queue and container
    /// names are lower-case and table names case-insensitive, so the two would share
    /// objects. The hub keeps the name it was created with.
    #[error("invalid task_hub_name '{name}': the task hub '{existing}' exists on this storage account, and hub names that differ only in case are the same hub there; use '{existing}' or another name")]
    HubNameCase {
        /// The name given.
        name: String,
        /// The name the existing hub was created with.
        existing: String,
    },
    /// Creating the hub's tables, queues or container failed.
    #[error("could not open the task hub on Azure Storage: {0}")]
    Open(#[from] taskhub_storage::StorageError),
}

impl AzureError {
    /// True if opening may succeed when retried unchanged.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Open(e) if e.is_retryable())
    }
}
