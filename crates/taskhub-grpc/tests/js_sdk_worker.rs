//! The official Durable Task JavaScript SDK (`@microsoft/durabletask-js`, pinned in
//! scripts/with-js-sdk.sh) as a WORKER: a Taskhub worker with an empty registry hands every
//! orchestration turn and activity to the SDK worker connected to its gRPC endpoint.
//! tests/js/worker_scenarios.js runs orchestrations written with the SDK (sequence,
//! fan-out/fan-in, sub-orchestration, timer, external events before and after the wait,
//! whenAny with a timer, continue-as-new keeping events, activity and sub-orchestration
//! retries, failure details, custom status, version and tags, suspend/resume, terminate
//! (recursive and not), a JSON null kept on every path, a terminate output that is an object,
//! a sub-orchestration's parent name, restart with a new ID while running, query and list IDs
//! with paging, scheduled start, history, restart, rewind of an instance that did not fail refused, purge) and asserts every
//! result, on SQLite and on Azurite.
//!
//! Run as `scripts/with-js-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc --test
//! js_sdk_worker`
//! (scripts/test.sh does); without it, it fails saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::script::Script;
use common::sdk::SdkServer;
use common::Backend;

common::on_backends!(
    run_scenarios,
    javascript_sdk_workers_run_orchestrations_on_sqlite = Sqlite,
    javascript_sdk_workers_run_orchestrations_on_azurite = Azure
);

async fn run_scenarios(backend: Backend) {
    let node_path =
        taskhub_test_support::env::js_sdk("cargo test -p taskhub-grpc --test js_sdk_worker");
    let scenarios = Script::node(
        node_path,
        "js/worker_scenarios.js",
        "all 27 JavaScript SDK worker checks passed",
    )
    .within(Duration::from_secs(300));
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}
