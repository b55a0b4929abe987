//! Acceptance tests of client operations and the events they send, against a running worker,
//! one module per case:
//! - `carried_order`: events carried across continue-as-new keep their order (every backend:
//!   Azure under `scripts/with-azurite.sh`, PostgreSQL under `scripts/with-postgres.sh`);
//! - `continue_as_new`: no event is lost across continue-as-new (SQLite, extended sessions
//!   on and off);
//! - `prestart`: terminate, suspend and purge act at once on an instance whose start is
//!   scheduled in the future (`ManualClock`);
//! - `raise_idempotent`: a raise retried under one event ID is delivered once;
//! - `row_repair`: a Terminated row rebuilt from history keeps the reason;
//! - `suspend_reason`: the suspension reason is part of the status;
//! - `terminate_active`: `TerminateActive` ends only the execution it replaces.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/backends.rs"]
mod backends;
#[path = "../common/mod.rs"]
mod common;

mod carried_order;
mod continue_as_new;
mod prestart;
mod raise_idempotent;
mod row_repair;
mod suspend_reason;
mod terminate_active;
