//! How a worker stops, one module per case:
//! - `clock`: the graceful-shutdown timeout runs on the hub's `Clock`;
//! - `graceful`: work still running when `shutdown_timeout` runs out is abandoned and
//!   visible again at once; work that finishes in time is kept;
//! - `worker_drop`: dropping a `WorkerHandle` without `shutdown` stops the worker.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod clock;
mod graceful;
mod worker_drop;
