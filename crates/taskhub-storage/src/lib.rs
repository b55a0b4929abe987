//! The storage seam of Taskhub: narrow traits for the task hub objects (DESIGN §2), the
//! [`Clock`], and [`StorageError`] with `is_retryable()`.
//!
//! A backend implements [`TaskHubStore`] and runs the conformance suite
//! (feature `testing`, macro `conformance_tests!`) from its `tests/conformance.rs`. Every
//! "MUST" in these trait docs has a named case in that suite.
//!
//! The seam is shaped so that Azure Storage can implement it: no transaction spans two objects
//! (see the ordered checkpoint in [`CheckpointStore`]), queue messages are at most 64 KB, a
//! dequeue returns at most 32 messages, and conditional writes use ETags.

// First: the wrappers below use its macro.
#[macro_use]
mod forward;

pub mod backend;
pub mod backoff;
pub mod checkpoint;
pub mod clear;
pub mod clock;
pub mod dead_letters;
pub mod error;
pub mod faults;
#[cfg(feature = "testing")]
pub mod faulty;
pub mod history;
pub mod instances;
pub mod instrumented;
pub mod list_order;
pub mod memory;
mod operation;
pub mod options;
pub mod ordered_checkpoint;
pub mod partitions;
pub mod payloads;
pub mod processes;
pub mod queue;
#[cfg(feature = "sql")]
pub mod sql;
pub mod store;

#[cfg(feature = "testing")]
pub mod conformance;

pub use checkpoint::{
    CheckpointOutcome, CheckpointRequest, CheckpointStore, HistoryWrite, LeaseFence,
    OutboundMessage,
};
pub use clear::{ClearStore, Cleared};
pub use clock::{Clock, ManualClock, Sleep, SystemClock};
pub use dead_letters::{DeadLetter, DeadLetterStore};
pub use error::{StorageError, StorageResult};
pub use history::{ETag, HistorySnapshot, HistoryStore};
pub use instances::{
    ExecutionRecord, Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore, Tags,
    MAX_EXECUTION_RECORDS,
};
pub use instrumented::{Instrumented, MetricsSnapshot, StoreMetrics};
pub use list_order::{CreatedCursor, ListOrder};
pub use operation::Operation;
pub use ordered_checkpoint::{
    run_ordered_checkpoint, CheckpointPrimitives, CheckpointStep, NoObserver, StepObserver,
};
pub use partitions::{
    check_partition_count, HubInfo, LeaseTable, PartitionRow, PartitionStore,
};
pub use payloads::PayloadStore;
pub use processes::{
    check_schema, refuse_older_processes, ProcessAnnouncement, ProcessKind, ProcessRecord,
    ProcessStore, PROCESS_LIVENESS_WINDOW, PROCESS_RECORD_RETENTION,
};
pub use queue::{
    check_messages, check_queue, Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore,
    Receipt, MAX_DELAY, MAX_DEQUEUE_BATCH, MAX_MESSAGE_BYTES, MAX_PARTITIONS,
};
pub use store::{QueueWake, TaskHubStore};

/// Re-exports for the expansion of [`conformance_tests!`] in a backend's test crate, so that a
/// backend needs only `taskhub-storage` (feature `testing`) as a dev-dependency.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod __private {
    pub use tokio;
}
