//! A worker's own state over its life: the sessions it keeps in memory, the rows it keeps
//! for processes that run no worker (`taskhub serve`, the CLI), and how it stops. One module
//! per case:
//! - `extended_sessions`: with them on, history is loaded once; with them off, every turn;
//! - `finished_sessions`: a finished instance's session is dropped at once (bounded memory,
//!   invariant 5);
//! - `graceful_shutdown`: work still running when `shutdown_timeout` runs out is abandoned
//!   and visible again at once; work that finishes in time is kept;
//! - `partition_turns`: each partition row counts the turns committed on it, across owners;
//! - `process_heartbeat`: the process record is renewed on the hub's clock, and reports a
//!   newer build's migration;
//! - `shutdown_clock`: the graceful-shutdown timeout runs on the hub's `Clock`;
//! - `worker_drop`: dropping a `WorkerHandle` without `shutdown` stops the worker.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/backends.rs"]
mod backends;
#[path = "../common/mod.rs"]
mod common;

mod extended_sessions;
mod finished_sessions;
mod graceful_shutdown;
mod partition_turns;
mod process_heartbeat;
mod shutdown_clock;
mod worker_drop;
