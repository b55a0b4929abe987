//! The official Durable Task JavaScript SDK (`@microsoft/durabletask-js` 0.4.0, pinned in
//! scripts/with-js-sdk.sh) as a WORKER: a Taskhub worker with an empty registry hands every
//! orchestration turn, activity and entity batch to the SDK worker connected to its gRPC
//! endpoint. Each scenario file asserts every result, on SQLite and on Azurite:
//! * tests/js/worker_scenarios.js runs orchestrations written with the SDK (sequence,
//!   fan-out/fan-in, sub-orchestration, timer, external events before and after the wait,
//!   whenAny with a timer, continue-as-new keeping events, activity and sub-orchestration
//!   retries, failure details, custom status, version and tags, suspend/resume, terminate
//!   (recursive and not), a JSON null kept on every path, a terminate output that is an
//!   object, a sub-orchestration's parent name, restart with a new ID while running, query and
//!   list IDs with paging, scheduled start, history, restart, rewind of an instance that did
//!   not fail refused, purge);
//! * tests/js/entity_scenarios.js runs durable entities written with the SDK: a function-style
//!   and a class-based entity (signals from a client, get state, a failed operation rolled
//!   back), calls and a signal from an orchestration (result and failure), and critical
//!   sections over two entities from concurrent orchestrations.
//!
//! Run as `scripts/with-js-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc --test
//! js_sdk_worker`
//! (scripts/test.sh does); without it, it fails saying so.

mod common;

use std::time::Duration;

use common::script::Script;
use common::sdk::SdkServer;
use common::Backend;

/// A scenario file under tests/ and the line it prints when every check passed.
type Scenarios = (&'static str, &'static str);

const ORCHESTRATIONS: Scenarios = (
    "js/worker_scenarios.js",
    "all 27 JavaScript SDK worker checks passed",
);

const ENTITIES: Scenarios = (
    "js/entity_scenarios.js",
    "all 4 JavaScript SDK entity checks passed",
);

common::on_backends!(
    run_scenarios(ORCHESTRATIONS),
    javascript_sdk_workers_run_orchestrations_on_sqlite = Sqlite,
    javascript_sdk_workers_run_orchestrations_on_azurite = Azure
);

common::on_backends!(
    run_scenarios(ENTITIES),
    javascript_sdk_entities_on_sqlite = Sqlite,
    javascript_sdk_entities_on_azurite = Azure
);

async fn run_scenarios((file, passed): Scenarios, backend: Backend) {
    let node_path =
        taskhub_test_support::env::js_sdk("cargo test -p taskhub-grpc --test js_sdk_worker");
    let scenarios = Script::node(node_path, file, passed).within(Duration::from_secs(300));
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}
