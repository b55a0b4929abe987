//! A worker process paused (SIGSTOP) at each step of a checkpoint past its lease, then resumed
//! (issue 14, item 1; issue 23): the body is `common/paused_checkpoint.rs`, one test per backend
//! (`azure::…`, `postgres::…`). On Azure Storage (Azurite) a checkpoint is a sequence of
//! ordered steps; on PostgreSQL the stopped worker holds its partition's fence `FOR SHARE`
//! inside the transaction: the server ends its idle transaction after 5 s, the other worker's
//! lease goes through, and the resumed worker's commit fails, then its retry is refused by the
//! fence. Not on SQLite (one writer: a writer stopped in its transaction stops every other; its
//! own paused-worker test is `paused_worker.rs`) nor memory (no hub shared between processes).
//!
//! Run: `scripts/with-azurite.sh scripts/with-postgres.sh cargo test -p taskhub --test
//! paused_checkpoint`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/paused_checkpoint.rs"]
mod paused;
#[path = "common/worker_procs.rs"]
mod worker_procs;

use paused::*;

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn paused_checkpoint_process() {
    child_process();
}

// Issue 20, item 2: a writer resumed in a sub-orchestration's first turn never turns the
// child's newer row back; and the victim paused at each step in turn (a fresh hub and fresh
// processes for each).
taskhub_test_support::backend_matrix!(
    [in paused_checkpoint]
    a_writer_resumed_in_a_childs_first_turn_never_overwrites_the_newer_row,
    a_worker_paused_at_each_step_of_a_checkpoint_past_its_lease_loses_nothing,
);
