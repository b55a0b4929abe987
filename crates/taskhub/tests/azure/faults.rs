//! The fault suite (`common/fault_suite.rs`) on Azure Storage (Azurite), through the
//! backend-agnostic `FaultyStore` wrapper: torn checkpoints after each step of Azure's own
//! ordered checkpoint (stopped by the shared driver), seeded random faults of every call, and
//! a torn checkpoint's outbox re-sent once, without the work items whose results were seen,
//! and then cleared. Every instance finishes with the
//! right output and no event is applied twice. Each test uses fresh hubs and few instances
//! (Azurite slows down as a queue grows).
//!
//! Run with Azurite up: `scripts/with-azurite.sh cargo test -p taskhub --test azure faults::`.

use std::sync::Arc;
use std::time::Duration;

use crate::backends;
use crate::fault_suite;
use crate::fault_suite::Sweep;
use taskhub::Settings;
use taskhub_storage::TaskHubStore;

async fn backend() -> Arc<dyn TaskHubStore> {
    backends::azure_store(&backends::unique_hub_name()).await
}

/// Azure keeps time itself in whole seconds: visibility timeouts of a few seconds bring lost
/// deletes and abandoned messages back within the test.
fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(2),
        work_item_visibility_timeout: Duration::from_secs(3),
        // A torn checkpoint's outbox is re-sent once it is a work-item visibility timeout and a
        // poll old.
        lease_interval: Duration::from_secs(3),
        lease_renew_interval: Duration::from_secs(1),
        lease_acquire_interval: Duration::from_secs(1),
        ..backends::settings(backends::Backend::Azure)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_outbox_is_resent_once() {
    fault_suite::torn_outbox_is_resent_once(backend().await, settings()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_outbox_leaves_out_a_work_item_whose_result_was_seen() {
    let settings = Settings {
        work_item_visibility_timeout: Duration::from_secs(4),
        lease_interval: Duration::from_secs(2),
        ..settings()
    };
    fault_suite::torn_outbox_leaves_out_a_work_item_whose_result_was_seen(
        backend().await,
        settings,
    )
    .await;
}

/// Runs under torn checkpoints and seeded faults, each on a fresh hub.
fn sweep() -> Sweep {
    Sweep {
        backend: || Box::pin(backend()),
        settings: settings(),
        timer: Duration::from_secs(1),
        label: "azure, ",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_checkpoints_after_each_step() {
    sweep().torn_after_each_step(30, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_faults_and_torn_checkpoints() {
    sweep().seeded(1..=2, 6).await;
}
