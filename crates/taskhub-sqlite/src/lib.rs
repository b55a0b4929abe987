//! The embedded Taskhub backend: the whole task hub in one SQLite file (bundled SQLite,
//! nothing to install).
//!
//! * [`SqliteStore`] implements [`taskhub_storage::TaskHubStore`]; open it with
//!   [`SqliteStore::open`] and [`SqliteOptions`].
//! * The file is in WAL mode; [`Durability`] picks `synchronous = NORMAL` or `FULL`.
//! * Its options come from code ([`SqliteOptions`]) or from configuration: the `[sqlite]`
//!   table of `taskhub.toml` and `TASKHUB_SQLITE_*` variables (see [`options`]).
//! * Several processes may share the file: every write is a `BEGIN IMMEDIATE` transaction.
//! * A dedicated writer thread group-commits: everything queued while it was busy is applied in
//!   one transaction, without savepoints; only if a request fails is the batch rolled back and
//!   run again with a savepoint per request, so the failed one alone is undone (see
//!   [`writer`]). Under `NORMAL` durability a write that comes alone runs on the caller's
//!   thread instead. A second thread checkpoints the WAL into the database file, so no commit
//!   waits for that.
//! * The schema is versioned with `PRAGMA user_version` and migrated on open (see [`schema`]).
//! * A checkpoint is one transaction: fence, history ETag, events, instance row, outbound
//!   messages and consumed deletes commit together or not at all.
//! * [`delete_hub_files`] deletes a hub (the file and its `-wal`, `-shm`, `-journal`).

pub mod backend;
mod checkpoint;
mod checkpointer;
mod clear;
mod codec;
mod dead_letters;
mod delete;
mod errors;
mod history;
mod instances;
pub mod options;
mod partitions;
mod payloads;
mod processes;
mod queues;
mod reader;
pub mod schema;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod writer;

pub use backend::SqliteBackend;
pub use delete::{delete_hub_files, DeletedFiles, HUB_FILE_SUFFIXES};
pub use instances::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use options::{Durability, SqliteConfigError, SqliteOptions, DEFAULT_BUSY_TIMEOUT};
pub use store::SqliteStore;
pub use taskhub_storage::backend::{BackendOptions, OptionError};
pub use writer::WriterStats;
