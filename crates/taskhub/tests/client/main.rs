//! Client operations on instances, end to end on a running worker, one module per case:
//! - `executions`: the status of a given execution, also after continue-as-new;
//! - `hub_clear`: `clear_hub` with a turn in flight (memory, SQLite, Azure);
//! - `purge_budget`: a purge by filter stops when its time budget is spent;
//! - `start_row_race`: a client start races the worker for the instance row;
//! - `sub_orchestration_in_use`: a sub-orchestration ID already in use is refused;
//! - `tags`: instance tags from the start to listings;
//! - `typed_api`: descriptors register, call and start orchestrations and activities.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "tests"
)]

#[path = "../common/backends.rs"]
mod backends;
#[path = "../common/mod.rs"]
mod common;

mod executions;
mod hub_clear;
mod purge_budget;
mod start_row_race;
mod sub_orchestration_in_use;
mod tags;
mod typed_api;
