//! The official Durable Task Go SDK (`github.com/microsoft/durabletask-go`, pinned in
//! tests/go/go.mod) as a WORKER and as a client, unchanged: a Taskhub worker with an empty
//! registry hands every orchestration turn and activity to the SDK worker connected to its gRPC
//! endpoint. The SDK's protos have no completion token, no health pings and no entities.
//!
//! tests/go/main.go (built by scripts/with-go-sdk.sh) runs orchestrations written with the SDK
//! (sequence, fan-out/fan-in, sub-orchestration, timer, external events before and after the
//! wait, a wait with a timeout, continue-as-new keeping and dropping unread events, activity
//! and sub-orchestration retries, failures as orchestrations see them, custom status,
//! suspend/resume, terminate (recursive and not), metadata, scheduled start, ID reuse
//! policies, purge) and asserts every result, and that every completion was taken and no work
//! item the SDK does not know reached it, on SQLite and on Azurite. Health pings go out every
//! second here and an entity is signalled first, so a ping or an entity batch sent to the Go
//! worker would show. This test then checks the failure details the worker stored, which the Go
//! client cannot read.
//!
//! Run as `scripts/with-go-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc --test
//! go_sdk_worker`
//! (scripts/test.sh does); without it, it fails saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::sdk::SdkServer;
use common::Backend;
use taskhub::{InstanceId, OrchestrationStatus, StatusOptions};
use taskhub_grpc::DispatcherSettings;

common::on_backends!(
    run_scenarios,
    go_sdk_workers_run_orchestrations_on_sqlite = Sqlite,
    go_sdk_workers_run_orchestrations_on_azurite = Azure
);

async fn run_scenarios(backend: Backend) {
    let program = taskhub_test_support::env::go_sdk(
        "scripts/with-azurite.sh cargo test -p taskhub-grpc --test go_sdk_worker",
    );
    // The Go worker declared no entity support: no ping and no entity batch may reach it.
    let server =
        SdkServer::start_without_entities(backend, DispatcherSettings::default(), "go").await;
    // `env PROGRAM HOST:PORT`: the script runner passes a path, then the address.
    let scenarios = common::script::Script {
        program: "env",
        path: program.into(),
        env: Vec::new(),
        passed: "all 21 Go SDK worker checks passed",
        within: Duration::from_secs(300),
    };
    common::script::run(scenarios, &server.addr.to_string()).await;

    // What the Go worker stored when its orchestration failed (its client does not read it).
    let failed = server
        .hub
        .client()
        .get_status(
            &InstanceId::new("go-fail").unwrap(),
            StatusOptions::default(),
        )
        .await
        .unwrap()
        .expect("go-fail exists");
    assert_eq!(failed.status(), OrchestrationStatus::Failed);
    let failure = failed.row.failure.expect("go-fail has failure details");
    assert!(
        failure.message.contains("Kah-BOOOOM!!!"),
        "{failure:?} does not name the activity's error"
    );
    assert!(!failure.error_type.is_empty(), "{failure:?} has no type");
    server.stop().await;
}
