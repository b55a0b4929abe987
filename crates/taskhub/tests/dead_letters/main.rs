//! Poison messages and the dead-letter store, one module per case:
//! - `poison`: a control message that fails on every delivery is dead-lettered after
//!   `max_dequeue_count` deliveries, with its reason;
//! - `once`: a message is never dead-lettered twice, whatever the store fails or loses.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod once;
mod poison;
