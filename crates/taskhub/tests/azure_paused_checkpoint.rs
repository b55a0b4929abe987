//! A worker process paused (SIGSTOP) at each step of a checkpoint past its lease, then resumed,
//! on Azure Storage (Azurite). Issue 14, item 1. The body is shared with the other backends: `common/paused_checkpoint.rs`.
//!
//! Run: `scripts/with-azurite.sh cargo test -p taskhub --test azure_paused_checkpoint`.
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

use paused::Target;

const TARGET: Target = Target {
    backend: backends::Backend::Azure,
    hub_file: backends::AZURE_HUB_FILE,
    prefix: "azure",
};

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn paused_checkpoint_process() {
    paused::child_process(&TARGET);
}

/// Issue 20, item 2: a writer resumed in a sub-orchestration's first turn never turns the
/// child's newer row back (see the shared body).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_resumed_in_a_childs_first_turn_never_overwrites_the_newer_row() {
    paused::a_writer_resumed_in_a_childs_first_turn_never_overwrites_the_newer_row(&TARGET).await;
}

/// The victim pauses at each step in turn (a fresh hub and fresh processes for each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_paused_at_each_step_of_a_checkpoint_past_its_lease_loses_nothing() {
    paused::a_worker_paused_at_each_step_of_a_checkpoint_past_its_lease_loses_nothing(&TARGET)
        .await;
}
