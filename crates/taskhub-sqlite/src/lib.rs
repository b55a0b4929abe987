//! The embedded Taskhub backend, and the default: the whole task hub in one SQLite file
//! (bundled SQLite, nothing to install).
//!
//! * [`SqliteStore`] implements [`taskhub_storage::TaskHubStore`]; open it with
//!   [`SqliteStore::open`] and [`SqliteOptions`], or through the plug-in, [`SqliteBackend`].
//! * The file is in WAL mode; [`Durability`] picks `synchronous = NORMAL` or `FULL`.
//! * Several processes may share the file: every write is a `BEGIN IMMEDIATE` transaction.
//! * A dedicated writer thread group-commits: everything queued while it was busy is applied in
//!   one transaction, without savepoints; only if a request fails is the batch rolled back and
//!   run again with a savepoint per request, so the failed one alone is undone (see
//!   [`writer`]; under `full` durability a batch of only dequeues commits without an fsync).
//!   Under `normal` durability a write that comes alone (nothing queued, the writer idle)
//!   runs on the caller's thread instead. A second thread (`checkpointer.rs`), nudged by the
//!   writer's WAL hook, copies the WAL into the database file, so no commit waits for that.
//! * Reads share a pool of connections that bounds them to its size (`reader.rs`); point reads
//!   (`get_instance`, `hub_info`) run on the caller's thread, handed to a blocking thread only
//!   while the database is busy.
//! * The schema is versioned with `PRAGMA user_version` and migrated on open (see [`schema`]);
//!   from v7 a migration refuses while a live process of an older schema, or a lease renewed
//!   in the last minute, exists, and a statement that finds a table gone under a newer
//!   stored version answers `NewerSchema`.
//! * A checkpoint is one transaction: fence, history ETag, events, instance row, outbound
//!   messages and consumed deletes commit together or not at all.
//! * [`delete_hub_files`] deletes a closed hub: the file and its `-wal`, `-shm`, `-journal`.
//!
//! # Files
//!
//! Every backend crate names its files by role, the same way: `store.rs` (the store),
//! `options.rs` (the options struct and its `set()`; the seam layers the sources),
//! `backend.rs` (the plug-in: `Backend` and its `HubLocation`), `testing.rs` (test
//! configuration and hooks, feature `testing`), `errors.rs` (the service's errors as
//! `StorageError`), `codec.rs` (seam values as stored values), `schema.rs` (layout and
//! migrations), and one file per seam object: `queues.rs`, `history.rs`, `instances.rs`,
//! `partitions.rs`, `payloads.rs`, `dead_letters.rs`, `processes.rs`, `checkpoint.rs`,
//! `clear.rs`. Here also: [`writer`] and `checkpointer.rs` (the two threads), `reader.rs`
//! (the read pool), `delete.rs` (deleting a hub's files). What SQLite and PostgreSQL both
//! build (codecs, the instance listing's statement) is `taskhub_storage::sql`.
//!
//! Depends on taskhub-core, taskhub-storage (feature `sql`), rusqlite (bundled, with the
//! statement cache and the WAL hook), async-trait, serde_json, thiserror, toml, humantime,
//! tokio.

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
