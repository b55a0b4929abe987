//! The runtime under storage faults and torn checkpoints, one module per case:
//! - `activity_result_retry`: a result whose commit keeps failing is retried, run once;
//! - `faulty_memory`: the fault suite (`common/fault_suite.rs`) on the memory backend;
//! - `faulty_sqlite`: `FaultyStore` around SQLite, whose checkpoint is never torn;
//! - `outbox_grace_skew`: the torn-outbox grace is timed by the loader's own clock;
//! - `stale_row_repair`: a loader whose history is older than the row does not repair it;
//! - `torn_ahead_rows`: rows and blobs written ahead of a torn commit stay invisible
//!   (memory, and Azure under `scripts/with-azurite.sh`).
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
#[path = "../common/fault_suite.rs"]
mod fault_suite;

mod activity_result_retry;
mod faulty_memory;
mod faulty_sqlite;
mod outbox_grace_skew;
mod stale_row_repair;
mod torn_ahead_rows;
