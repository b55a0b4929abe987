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
//!
//! # Modules
//!
//! * One narrow trait per task hub object: [`queue`] (visibility timeouts; the checks every
//!   backend applies to a message, [`check_messages`]), [`history`], [`instances`] (the
//!   listing's [`InstanceQuery`] leaves entity rows, IDs starting with `@`, out unless
//!   `include_entities`; `delete_instance_if` deletes only at the ETag read), [`payloads`],
//!   [`dead_letters`], [`partitions`] (lease rows and the hub's metadata), [`checkpoint`]
//!   (one turn's writes; [`ordered_checkpoint`] runs its steps for backends without
//!   transactions over their [`CheckpointPrimitives`], telling a [`StepObserver`] after each;
//!   a backend with transactions says so by `TaskHubStore::atomic_checkpoints`), [`clear`]
//!   (`clear_hub` empties a hub in place and counts what went: hub info and partitions stay,
//!   no ETag or receipt is handed out twice), [`processes`] (the registry of the processes
//!   serving a hub: announce, heartbeat, list, forget; `refuse_older_processes`, the check
//!   every migration runs, and `check_schema`, `NewerSchema` for a hub a newer build wrote).
//! * [`store`]: the whole hub as one trait object; [`error`]: [`StorageError`];
//!   [`clock`]: system and manual clocks; [`list_order`]: listings by ID or by creation time,
//!   its cursor, and `page_sorted` for backends without a creation-time index; [`backoff`]:
//!   the one retry and idle-poll policy; `Operation`: every seam call, named once.
//! * Wrappers, built on one forwarding macro (`forward_seam!`): [`instrumented`] (counts
//!   calls, errors and time per operation, also as `taskhub_storage_calls_total` /
//!   `taskhub_storage_errors_total` metrics); [`faults`] and `faulty` (feature `testing`): a
//!   seeded fault plan (fail, lose the response, delay, tear a checkpoint after step N) and
//!   the store that applies it around any backend.
//! * [`memory`]: the in-memory backend (with its plug-in and the fault plan built in).
//! * [`backend`] and [`options`]: how a backend plugs into the binaries — its `Backend`, a
//!   `HubLocation` that opens, creates and deletes a hub, and its options layered once
//!   (defaults, `taskhub.toml`, `TASKHUB_<BACKEND>_<NAME>`, overrides) around its `set()`.
//! * `sql` (feature `sql`): what the SQL backends share (codecs, the instance listing's
//!   statement). `conformance` (feature `testing`): the suite every backend runs;
//!   `test_hub` (feature `testing`): what the backends' test configurations share. `tls`
//!   (feature `tls`): the rustls client configuration of the backends that reach a server.
//!
//! Depends on taskhub-core, async-trait, metrics, serde, serde_json, thiserror, toml and
//! humantime (backend options), tokio (time; more with `testing`); rustls and webpki-roots
//! with `tls`.

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
#[cfg(feature = "tls")]
pub mod tls;

#[cfg(feature = "testing")]
pub mod conformance;
#[cfg(feature = "testing")]
pub mod test_hub;

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
    check_partition, check_partition_count, HubInfo, LeaseTable, PartitionRow, PartitionStore,
};
pub use payloads::PayloadStore;
pub use processes::{
    check_schema, refuse_older_processes, ProcessAnnouncement, ProcessKind, ProcessRecord,
    ProcessStore, PROCESS_LIVENESS_WINDOW, PROCESS_RECORD_RETENTION,
};
pub use queue::{
    check_dequeue, check_messages, check_queue, Dequeued, NewQueueMessage, QueueName, QueueStats,
    QueueStore, Receipt, MAX_DELAY, MAX_DEQUEUE_BATCH, MAX_MESSAGE_BYTES, MAX_PARTITIONS,
};
pub use store::{QueueWake, TaskHubStore};

/// Re-exports for the expansion of [`conformance_tests!`] in a backend's test crate, so that a
/// backend needs only `taskhub-storage` (feature `testing`) as a dev-dependency.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod __private {
    pub use tokio;
}
