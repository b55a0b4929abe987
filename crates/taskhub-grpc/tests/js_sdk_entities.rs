//! Durable entities written with the official Durable Task JavaScript SDK
//! (`@microsoft/durabletask-js` 0.4.0, pinned in scripts/with-js-sdk.sh, which serves entity
//! work items): a Taskhub worker with an empty registry hands every entity batch and
//! orchestration turn to the SDK worker connected to its gRPC endpoint.
//! tests/js/entity_scenarios.js runs a function-style and a class-based entity (signals from a
//! client, get state, a failed operation rolled back), calls and a signal from an
//! orchestration (result and failure), and critical sections over two entities from
//! concurrent orchestrations, and asserts every result, on SQLite and on Azurite.
//!
//! Run as `scripts/with-js-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc --test
//! js_sdk_entities`
//! (scripts/test.sh does); without it, it fails saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::script::Script;
use common::sdk::SdkServer;
use common::Backend;

common::on_backends!(
    run_scenarios,
    javascript_sdk_entities_on_sqlite = Sqlite,
    javascript_sdk_entities_on_azurite = Azure
);

async fn run_scenarios(backend: Backend) {
    let node_path =
        taskhub_test_support::env::js_sdk("cargo test -p taskhub-grpc --test js_sdk_entities");
    let scenarios = Script::node(
        node_path,
        "js/entity_scenarios.js",
        "all 4 JavaScript SDK entity checks passed",
    )
    .within(Duration::from_secs(300));
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}
