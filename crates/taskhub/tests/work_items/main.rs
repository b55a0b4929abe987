//! Activity work items between the turn that schedules them and the worker that runs them,
//! one module per case:
//! - `claimed`: the worker holding an orchestration runs its activities itself;
//! - `copies`: copies of one work item never both run in one worker;
//! - `doorbell`: work items left on the shared queue wake another worker's idle poller;
//! - `local_results`: results handed over in-process, recorded with the work item's delete.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

#[path = "../common/mod.rs"]
mod common;

mod claimed;
mod copies;
mod doorbell;
mod local_results;
