//! Idle pollers woken at once instead of after their back-off, one module per case:
//! - `immediate`: a message enqueued by this process wakes its idle poller;
//! - `postgres`: a message written through another store wakes it on PostgreSQL
//!   (`LISTEN/NOTIFY`, under `scripts/with-postgres.sh`).
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

mod immediate;
mod postgres;
