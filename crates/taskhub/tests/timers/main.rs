//! Delays longer or earlier than the queues show them, driven by a `ManualClock`, one module
//! per case:
//! - `lead`: a timer's message is visible `TIMER_LEAD` early; its turn runs exactly when due;
//! - `long`: a timer longer than the backend's longest message delay travels in chunks;
//! - `scheduled_start_far`: a start scheduled beyond that delay waits Pending and runs on time.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod lead;
mod long;
mod scheduled_start_far;
