//! Durable entities on a running worker, past the suites every backend runs (`entities.rs`),
//! on memory or SQLite, one module per case, none starting processes:
//! - `api`: a batch of queued operations commits as one checkpoint; IDs are validated;
//! - `clean_race`: clean-up never deletes an entity that changed after it read the row;
//! - `faults`: exactly-once state updates under torn checkpoints and seeded storage faults;
//! - `handover`: calls and signals across partitions while partitions change hands;
//! - `late_redelivery`: a message redelivered after many more were applied is still skipped;
//! - `lock_release`: no entity stays locked for an orchestration that no longer wants it;
//! - `order`: the reorder window's safety valve (`ManualClock`);
//! - `timers`: scheduled signals fire on time, not earlier (`ManualClock`).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/entities_api_suite.rs"]
mod api_suite;
#[path = "../common/mod.rs"]
mod common;
#[path = "../common/entities_faults_suite.rs"]
mod faults_suite;
#[path = "../common/entities_order_suite.rs"]
mod order_suite;

mod api;
mod clean_race;
mod faults;
mod handover;
mod late_redelivery;
mod lock_release;
mod order;
mod timers;
