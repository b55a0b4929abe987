//! The runtime meeting the store it opens, one module per case:
//! - `backend_limits`: a message larger than the store's queues take goes to the payload store;
//! - `busy_startup`: opening and starting on a busy store retry, then fail with a clear error;
//! - `schema_moved`: a hub migrated by a newer build stops the worker with one clear error;
//! - `sqlite_options`: the `[sqlite]` table of `taskhub.toml` configures the SQLite backend.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod backend_limits;
mod busy_startup;
mod schema_moved;
mod sqlite_options;
