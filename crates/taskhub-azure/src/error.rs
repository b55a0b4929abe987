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
