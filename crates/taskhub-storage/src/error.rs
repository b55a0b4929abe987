//! The storage seam's error type.

use std::time::Duration;

/// What went wrong in a storage operation. Backends map their native errors onto these
/// variants; the runtime decides what to do from the variant and [`is_retryable`](Self::is_retryable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// A conditional write failed: the row's ETag (or existence) was not what the caller expected.
    #[error("conflict on {what}: it was changed by someone else")]
    Conflict {
        /// The object, e.g. `instance 'order-1'` or `partition 3`.
        what: String,
    },
    /// A checkpoint was made under a lease epoch that is no longer current.
    #[error("fenced: partition {partition} is at epoch {current}, checkpoint was made under epoch {attempted}")]
    Fenced {
        /// The partition.
        partition: u32,
        /// The epoch the writer believed it held.
        attempted: u64,
        /// The epoch in storage.
        current: u64,
    },
    /// The object does not exist.
    #[error("{what} not found")]
    NotFound {
        /// The object.
        what: String,
    },
    /// A receipt no longer refers to a dequeued message (it was deleted, or its visibility
    /// timeout expired and it was dequeued again).
    #[error("receipt for message in {queue} is no longer valid")]
    ReceiptExpired {
        /// The queue name.
        queue: String,
    },
    /// A value is larger than the backend accepts.
    #[error("{what} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The caller passed an argument outside the seam's contract.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The hub's schema (or layout) is newer than this build reads: a newer build of taskhub
    /// created or migrated it. Not retryable: run a newer build.
    #[error(
        "{what} was written by a newer build of taskhub (schema {found}; this build reads up \
         to {supported}): use that build or a newer one"
    )]
    NewerSchema {
        /// The hub or file.
        what: String,
        /// The version stored.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A migration was refused: processes of an older build are alive on the hub (their
    /// heartbeat or lease is recent) and would not notice the new schema. Stop them first.
    #[error(
        "{what}: not migrating to schema {target} while processes of an older build are alive: \
         {}; stop them (a stopped process stops counting {} s after its last heartbeat), then \
         start this build again",
        processes.join("; "),
        crate::processes::PROCESS_LIVENESS_WINDOW.as_secs()
    )]
    OlderProcesses {
        /// The hub or file.
        what: String,
        /// The schema version the migration would write.
        target: u32,
        /// Each live older process, described (kind, ID, host, pid, versions).
        processes: Vec<String>,
    },
    /// Stored data could not be read back: the store is corrupt (a newer schema is `NewerSchema`).
    #[error("corrupt store: {what}: {detail}")]
    Corrupt {
        /// What could not be read.
        what: String,
        /// Why.
        detail: String,
    },
    /// The store is busy or throttling; try again after the hint, if any.
    #[error("storage busy{}", retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    Busy {
        /// A back-off hint.
        retry_after: Option<Duration>,
    },
    /// A transient failure (I/O, network, timeout).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The object is being deleted (Azure Storage keeps a deleted table, queue or container
    /// name for a while): creating it again succeeds later, so this is retryable.
    #[error("{what} is being deleted; it can be created again shortly")]
    BeingDeleted {
        /// The object.
        what: String,
    },
    /// A permanent backend failure that fits no other variant.
    #[error("storage backend error: {0}")]
    Backend(String),
}

impl StorageError {
    /// True if the same operation may succeed when retried unchanged.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Busy { .. } | Self::Unavailable(_) | Self::BeingDeleted { .. }
        )
    }

    /// True for conditional-write failures (`Conflict`, `Fenced`): re-read, then decide.
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. } | Self::Fenced { .. })
    }
}

/// The result type of the seam.
pub type StorageResult<T> = Result<T, StorageError>;
