//! The lease manager and the partitions it hands out, one module per case:
//! - `bump_in_flight`: a partition bump while messages are in flight dead-letters nothing;
//! - `cadence`: the adaptive read cadence, driven by a manual clock;
//! - `fenced_kept`: a fenced checkpoint on a partition whose lease is still this worker's;
//! - `offline`: an offline partition whose owner no longer holds it is released;
//! - `sim`: the deterministic simulation of the lease manager (invariants 1 and 7).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod bump_in_flight;
mod cadence;
mod fenced_kept;
mod offline;
mod sim;
