//! The runtime on Azure Storage (Azurite, under `scripts/with-azurite.sh`), one module per
//! case, none starting processes:
//! - `faults`: the fault suite (`common/fault_suite.rs`) through `FaultyStore`;
//! - `lease_stall`: a worker keeps its leases through a hung lease request (loopback proxy);
//! - `outbox_clear`: a failed outbox clear (checkpoint step 5) is logged, counted and retried;
//! - `races`: a message that overtakes its instance's start, and a start delivered twice;
//! - `row_blobs`: a large instance row keeps one data blob;
//! - `timers`: a timer fires no earlier than due although queue delays are whole seconds.
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
#[path = "../../../taskhub-azure/tests/loopback/proxy.rs"]
mod proxy;

mod faults;
mod lease_stall;
mod outbox_clear;
mod races;
mod row_blobs;
mod timers;
