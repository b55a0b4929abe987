//! Extended sessions (orchestrations kept in memory between turns), one module per case:
//! - `extended`: with them on, history is loaded once; with them off, every turn loads it;
//! - `finished`: a finished instance's session is dropped at once (bounded memory,
//!   invariant 5).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

mod extended;
mod finished;
