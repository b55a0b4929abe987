//! Orchestration versioning on the worker side (DTFx `VersioningSettings`): two workers of
//! different versions on one hub, each running only its version's instances (`reject` gives
//! the others back, uncounted, for the other worker); `fail` fails a mismatched instance
//! naming both versions; `default_version` versions the starts that give none.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::stores::memory_store;
use common::*;
use taskhub::settings::{VersionFailure, VersionMatch};
use taskhub::*;
use taskhub_storage::TaskHubStore;

fn settings(worker: &str, version: &str, failure: VersionFailure) -> Settings {
    Settings {
        worker_id: worker.into(),
        worker_version: version.into(),
        version_match: VersionMatch::Strict,
        version_failure: failure,
        partition_count: 2,
        // A counted redelivery would dead-letter a rejected message at once.
        max_dequeue_count: 1,
        lease_interval: Duration::from_secs(3),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_millis(200),
        ..fast_settings()
    }
}

/// Both versions of `Order` on every worker (so only the version check keeps an instance off
/// a worker); each returns the name of the worker that ran it.
fn registry(worker: &'static str) -> Registry {
    let mut reg = Registry::new();
    for version in ["1", "2", "3"] {
        reg.orchestration_version("Order", version, move |_ctx, (): ()| async move {
            Ok::<_, OrchestrationError>(worker.to_owned())
        });
    }
    reg
}

async fn start(client: &TaskHubClient, version: &str) -> InstanceId {
    client
        .start_with(
            "Order",
            (),
            StartOptions {
                version: Some(version.into()),
                ..StartOptions::default()
            },
        )
        .await
        .unwrap()
}

async fn ran_on(client: &TaskHubClient, id: &InstanceId) -> String {
    let status = wait_done(client, id, STUCK).await;
    assert_eq!(status.status(), OrchestrationStatus::Completed, "{id}");
    status.output::<String>().unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_version_runs_on_the_worker_of_that_version() {
    let store: Arc<dyn TaskHubStore> = memory_store();
    let hub_v1 = TaskHub::open(
        store.clone(),
        settings("worker-v1", "1", VersionFailure::Reject),
    )
    .await
    .unwrap();
    let hub_v2 = TaskHub::open(
        store.clone(),
        settings("worker-v2", "2", VersionFailure::Reject),
    )
    .await
    .unwrap();
    let client = hub_v1.client();

    // The v1 worker alone holds every partition: it runs the v1 instances and gives the v2
    // ones back each time, uncounted (never dead-lettered at max_dequeue_count 1).
    let v1_worker = Worker::start(&hub_v1, registry("worker-v1")).await.unwrap();
    let mut v1 = Vec::new();
    let mut v2 = Vec::new();
    for _ in 0..4 {
        v1.push(start(&client, "1").await);
        v2.push(start(&client, "2").await);
    }
    for id in &v1 {
        assert_eq!(ran_on(&client, id).await, "worker-v1");
    }
    for id in &v2 {
        let row = find(&client, id).await.unwrap().row;
        assert_eq!(row.status, OrchestrationStatus::Pending, "{id} ran on v1");
    }

    // The v2 worker joins and the v1 worker leaves: the v2 instances run there.
    let v2_worker = Worker::start(&hub_v2, registry("worker-v2")).await.unwrap();
    v1_worker.shutdown().await;
    for id in &v2 {
        assert_eq!(ran_on(&client, id).await, "worker-v2");
    }
    assert!(client.list_dead_letters(None, 10).await.unwrap().is_empty());
    v2_worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_fails_a_mismatched_instance_naming_both_versions() {
    let store: Arc<dyn TaskHubStore> = memory_store();
    let mut worker_settings = settings("worker-v2", "2", VersionFailure::Fail);
    worker_settings.version_match = VersionMatch::CurrentOrOlder;
    let hub = TaskHub::open(store.clone(), worker_settings).await.unwrap();
    // A client whose starts without a version get version 3.
    let client_hub = TaskHub::open(
        store.clone(),
        Settings {
            default_version: "3".into(),
            ..fast_settings()
        },
    )
    .await
    .unwrap();
    let worker = Worker::start(&hub, registry("worker-v2")).await.unwrap();
    let client = client_hub.client();

    let older = start(&client, "1").await;
    assert_eq!(ran_on(&client, &older).await, "worker-v2");

    let newer = start(&client, "3").await;
    let defaulted = client.start("Order", ()).await.unwrap();
    for id in [&newer, &defaulted] {
        let status = wait_done(&client, id, STUCK).await;
        assert_eq!(status.row.version.as_deref(), Some("3"));
        assert_eq!(status.status(), OrchestrationStatus::Failed, "{id}");
        let failure = status.row.failure.unwrap();
        assert_eq!(failure.error_type, taskhub::worker::VERSION_MISMATCH);
        assert!(
            failure.message.contains("'3'") && failure.message.contains("'2'"),
            "{}",
            failure.message
        );
    }
    worker.shutdown().await;
}
