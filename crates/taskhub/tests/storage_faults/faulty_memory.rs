//! The fault suite (`common/fault_suite.rs`) on the memory backend, through the backend-agnostic
//! `FaultyStore` wrapper (the same bodies run on Azure in `azure/faults.rs`): torn checkpoints
//! after each step, seeded random faults, a torn checkpoint's outbox re-sent once and without
//! the work items whose results were seen, a failed
//! repair of a torn turn's row, and a redelivered start of a finished execution.

use std::sync::Arc;
use std::time::Duration;

use crate::common;
use crate::fault_suite;
use crate::fault_suite::Sweep;
use taskhub::Settings;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{SystemClock, TaskHubStore};

fn backend() -> Arc<dyn TaskHubStore> {
    Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))
}

fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_millis(800),
        work_item_visibility_timeout: Duration::from_millis(800),
        // A torn checkpoint's outbox is re-sent once it is a lease interval old (which is
        // more than the work-item visibility timeout and a poll here).
        lease_interval: Duration::from_secs(3),
        lease_renew_interval: Duration::from_secs(1),
        lease_acquire_interval: Duration::from_secs(1),
        ..common::fast_settings()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_outbox_is_resent_once() {
    fault_suite::torn_outbox_is_resent_once(backend(), settings()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_outbox_leaves_out_a_work_item_whose_result_was_seen() {
    // The claimed original is hidden longer than a lease: re-sent after a lease interval, as
    // before, its copy would have been in the queue before the original surfaced.
    let settings = Settings {
        work_item_visibility_timeout: Duration::from_millis(2_500),
        lease_interval: Duration::from_secs(1),
        lease_renew_interval: Duration::from_millis(300),
        lease_acquire_interval: Duration::from_millis(300),
        ..settings()
    };
    fault_suite::torn_outbox_leaves_out_a_work_item_whose_result_was_seen(backend(), settings)
        .await;
}

/// Runs under torn checkpoints and seeded faults, each on a fresh hub.
fn sweep() -> Sweep {
    Sweep {
        backend: || Box::pin(async { backend() }),
        settings: settings(),
        timer: Duration::from_millis(30),
        label: "",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_checkpoints_after_each_step() {
    sweep().torn_after_each_step(60, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_faults_and_torn_checkpoints() {
    sweep().seeded(1..=4, 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_row_repair_keeps_the_messages() {
    fault_suite::failed_row_repair_keeps_the_messages(backend()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_start_of_a_finished_execution_is_discarded() {
    fault_suite::duplicate_start_of_a_finished_execution_is_discarded(backend()).await;
}
