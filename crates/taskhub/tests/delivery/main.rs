//! Messages on their way to a worker and through it, one module per case:
//! - `claimed`: the worker holding an orchestration runs its activities itself;
//! - `copies`: copies of one work item never both run in one worker;
//! - `dead_letter`: a control message that fails on every delivery is dead-lettered after
//!   `max_dequeue_count` deliveries, with its reason;
//! - `dead_letter_once`: a message is never dead-lettered twice, whatever the store fails;
//! - `doorbell`: work items left on the shared queue wake another worker's idle poller;
//! - `immediate_wakeup`: a message enqueued by this process wakes its idle poller at once;
//! - `local_results`: results handed over in-process, recorded with the work item's delete;
//! - `postgres_wakeup`: a message written through another store wakes it on PostgreSQL
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

mod claimed;
mod copies;
mod dead_letter;
mod dead_letter_once;
mod doorbell;
mod immediate_wakeup;
mod local_results;
mod postgres_wakeup;
