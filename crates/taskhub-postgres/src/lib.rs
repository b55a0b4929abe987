//! Taskhub on PostgreSQL: a task hub that many worker processes on many machines share.
//!
//! * [`PostgresStore`] implements [`taskhub_storage::TaskHubStore`]; open it with
//!   [`PostgresStore::open`] and [`PostgresOptions`] (or through the plug-in,
//!   [`PostgresBackend`], by `--backend postgres`).
//! * One schema per task hub (`taskhub_<name>`): several hubs share a database, isolated.
//!   Versioned migrations (`schema_migrations`) are applied at create and checked at open
//!   (see [`schema`]).
//! * A checkpoint is one transaction whose first statement reads the partition's epoch
//!   `FOR SHARE` ([`checkpoint::FENCE_SQL`]): a stale owner's commit is rejected by the
//!   database itself.
//! * Work items are claimed with `FOR UPDATE SKIP LOCKED`, in batches; visibility timeouts
//!   and enqueue times use the server's clock (the store [owns time](taskhub_storage::TaskHubStore::owns_time)).
//! * `tokio-postgres` with a `deadpool-postgres` pool (prepared statements cached per
//!   connection), TLS through rustls.

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
mod store;
#[cfg(feature = "testing")]
mod testing;
mod tls;
mod writer;

pub use writer::WriterStats;

pub use backend::PostgresBackend;
pub use instances::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use options::{PostgresConfigError, PostgresOptions};
pub use store::{
    Create, PoolStatus, PostgresStore, IDLE_IN_TRANSACTION_TIMEOUT, POOL_CONNECTIONS, POOL_IDLE,
    POOL_WAITING,
};
pub use taskhub_storage::backend::{BackendOptions, OptionError};
