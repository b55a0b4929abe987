//! The error type of the runtime and client.

use taskhub_core::{CoreError, ExecutionId, FailureDetails, InstanceId, OrchestrationStatus};
use taskhub_storage::StorageError;

/// What can go wrong when using a task hub.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskhubError {
    /// A storage operation failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Bad input: an invalid instance ID, an unserializable payload, ...
    #[error(transparent)]
    Invalid(#[from] CoreError),
    /// A start was refused by the instance-ID reuse policy.
    #[error("instance '{instance_id}' already exists with status {status}")]
    AlreadyExists {
        /// The instance.
        instance_id: InstanceId,
        /// Its current status.
        status: OrchestrationStatus,
    },
    /// The instance does not exist.
    #[error("instance '{0}' not found")]
    NotFound(InstanceId),
    /// An instance has no execution of that ID (neither the current one nor one it keeps a
    /// record of).
    #[error("instance '{instance_id}' has no execution '{execution_id}'")]
    ExecutionNotFound {
        /// The instance.
        instance_id: InstanceId,
        /// The execution asked for.
        execution_id: ExecutionId,
    },
    /// An instance tag (or a tag filter) breaks the limits of `StartOptions::tags`.
    #[error("invalid tag {key:?}: {reason}")]
    InvalidTag {
        /// The tag's key (as given).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The operation does not apply to the instance in its current status.
    #[error("instance '{instance_id}' is {status}: cannot {operation}")]
    WrongStatus {
        /// The instance.
        instance_id: InstanceId,
        /// Its status.
        status: OrchestrationStatus,
        /// What was attempted.
        operation: &'static str,
    },
    /// A wait ran out of time.
    #[error("timed out after {0:?} waiting for instance '{1}'")]
    Timeout(std::time::Duration, InstanceId),
    /// A typed wait found the instance failed (see `InstanceHandle::wait_for_completion`).
    #[error("instance '{instance_id}' failed: {failure}")]
    InstanceFailed {
        /// The instance.
        instance_id: InstanceId,
        /// Its failure: error type, message, details.
        failure: FailureDetails,
    },
    /// A typed wait found the instance terminated (see `InstanceHandle::wait_for_completion`).
    #[error("instance '{instance_id}' was terminated: {reason}")]
    InstanceTerminated {
        /// The instance.
        instance_id: InstanceId,
        /// The reason given by whoever terminated it.
        reason: String,
    },
    /// A setting is out of range or malformed.
    #[error("invalid setting {name}: {reason}")]
    InvalidSetting {
        /// The setting (or file) name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An admin command named a partition the hub does not have.
    #[error("partition {partition} does not exist (the hub has {rows} partition rows)")]
    UnknownPartition {
        /// The partition named.
        partition: u32,
        /// How many rows exist.
        rows: usize,
    },
    /// A lease row kept changing under an admin command; try again.
    #[error("partition {0} changed while it was being updated; try again")]
    Contended(u32),
    /// The worker is shutting down or stopped.
    #[error("the worker has stopped")]
    Stopped,
    /// The store kept answering with a retryable error (busy, unavailable) for longer than
    /// `startup_busy_timeout` while a hub was opened or a worker started.
    #[error(
        "the store stayed busy for {waited:?} ({attempts} attempts) while {operation}; last error: {last}. \
         On SQLite, another process may be stopped inside a write transaction: resume or end it"
    )]
    StoreBusy {
        /// What was being done.
        operation: &'static str,
        /// How long the attempts went on.
        waited: std::time::Duration,
        /// How many attempts were made.
        attempts: u32,
        /// The last error.
        last: StorageError,
    },
}

impl TaskhubError {
    /// True if retrying the same call may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Storage(e) => e.is_retryable(),
            Self::Timeout(..) | Self::Contended(_) | Self::StoreBusy { .. } => true,
            _ => false,
        }
    }

    /// [`WrongStatus`](Self::WrongStatus): `operation` does not apply to `instance_id`, which
    /// is `status`.
    pub(crate) fn wrong_status(
        instance_id: &InstanceId,
        status: OrchestrationStatus,
        operation: &'static str,
    ) -> Self {
        Self::WrongStatus {
            instance_id: instance_id.clone(),
            status,
            operation,
        }
    }
}
