//! The rows a worker keeps for processes that run no worker (`taskhub serve`, the CLI), one
//! module per case:
//! - `partition_turns`: each partition row counts the turns committed on it, across owners;
//! - `process_heartbeat`: the process record is renewed on the hub's clock, and reports a
//!   newer build's migration.
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

mod partition_turns;
mod process_heartbeat;
