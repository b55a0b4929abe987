//! Taskhub on PostgreSQL: a task hub that many worker processes on many machines share.
//!
//! * [`PostgresStore`] implements [`taskhub_storage::TaskHubStore`]; open it with
//!   [`PostgresStore::open`] and [`PostgresOptions`] (or through the plug-in,
//!   [`PostgresBackend`], by `--backend postgres`). Its pool (`deadpool-postgres`, prepared
//!   statements cached per connection, bounded) sets on each connection what a DBA asks
//!   ([`session`]: the hub's `search_path`, READ COMMITTED, lock, statement and
//!   idle-in-transaction timeouts, an `application_name` naming the process); opening a hub
//!   checks the server is PostgreSQL 13 or later; `delete_hub` drops the schema, `pool_status`
//!   reports the pool.
//! * One schema per task hub (`taskhub_<name>`): several hubs share a database, isolated.
//!   Versioned migrations (`schema_migrations`) are applied at create and checked at open,
//!   under an advisory lock (see [`schema`], which also gives the lock order).
//! * A checkpoint is one READ COMMITTED transaction whose first statement reads the
//!   partition's epoch `FOR SHARE` ([`checkpoint::FENCE_SQL`]): a stale owner's commit is
//!   rejected by the database itself. Then the history (its ETag checked in the `UPDATE` that
//!   moves the head), outbound messages, instance row and consumed deletes.
//!   `checkpoint_observed` runs it statement by statement, telling the observer the ordered
//!   checkpoint's steps; `pipeline.rs` sends the same statements at once; `writer.rs`
//!   group-commits the checkpoints queued meanwhile in one transaction, redone one by one if
//!   one is refused ([`WriterStats`]).
//! * A lease write is one statement that moves the fence only when the epoch changes
//!   (`partitions.rs`).
//! * Work items are claimed with `FOR UPDATE SKIP LOCKED`, in batches; visibility timeouts
//!   and enqueue times use the server's clock (the store [owns time](taskhub_storage::TaskHubStore::owns_time));
//!   receipts are `id:token`. After a commit that made messages visible, a coalesced
//!   `pg_notify` wakes other processes' pollers through one `LISTEN` connection per store
//!   (`notify.rs`).
//! * Instance writes judge their condition in the write's own statement; listings page by
//!   keyset.
//! * TLS through rustls (ring) with the Mozilla roots and `tls_ca_file` (`tls.rs`); the URL,
//!   which holds a password, is never printed ([`options::redact`]).
//!
//! # Files
//!
//! Every backend crate names its files by role, the same way: `store.rs` (the store),
//! `options.rs` (the options struct and its `set()`; the seam layers the sources),
//! `backend.rs` (the plug-in: `Backend` and its `HubLocation`), `testing.rs` (test hooks,
//! feature `testing`: `corrupt_history_event`, `raw_client`), `errors.rs` (SQLSTATEs and pool
//! errors as `StorageError`), `codec.rs` (seam values as stored values), `schema.rs` (layout
//! and migrations), `tls.rs` (reaching the server), and one file per seam object:
//! `queues.rs`, `history.rs`, `instances.rs`, `partitions.rs`, `payloads.rs`,
//! `dead_letters.rs`, `processes.rs`, `checkpoint.rs`, `clear.rs` (one transaction that
//! first locks the data tables in a checkpoint's order, retried on a lost deadlock). Here
//! also: `pipeline.rs`, `writer.rs`, `notify.rs`, `statement.rs` (a statement prepared on a
//! pooled client), `session.rs` (each connection's settings, the server version check),
//! `upkeep.rs` (the tables' autovacuum settings, kept at each open). What PostgreSQL and
//! SQLite both build (codecs, the instance listing's statement) is `taskhub_storage::sql`. Tests run on a throwaway cluster
//! (`scripts/with-postgres.sh`).
//!
//! Depends on taskhub-core, taskhub-storage (features `sql`, `tls`: rustls and the web PKI
//! roots), tokio-postgres, deadpool-postgres, tokio-postgres-rustls with rustls, async-trait,
//! futures-util, serde_json, thiserror, toml, humantime, tracing, metrics, tokio.

pub mod backend;
pub mod checkpoint;
mod clear;
mod codec;
mod dead_letters;
mod errors;
mod history;
mod instances;
mod notify;
pub mod options;
mod partitions;
mod payloads;
mod pipeline;
mod processes;
mod queues;
pub mod schema;
mod server_stats;
pub mod session;
mod statement;
mod store;
#[cfg(feature = "testing")]
mod testing;
mod tls;
pub mod upkeep;
mod writer;

pub use server_stats::{ServerProbe, ServerStats};
pub use writer::WriterStats;

pub use backend::PostgresBackend;
pub use instances::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use options::{PostgresConfigError, PostgresOptions};
pub use store::{
    Create, PoolStatus, PostgresStore, IDLE_IN_TRANSACTION_TIMEOUT, POOL_CONNECTIONS, POOL_IDLE,
    POOL_WAITING,
};
pub use taskhub_storage::backend::{BackendOptions, OptionError};
