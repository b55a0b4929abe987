//! Durable entities written with the official Durable Task Python SDK (`durabletask`, pinned
//! in scripts/with-python-sdk.sh): a Taskhub worker with an empty registry hands every entity
//! batch (and orchestration turn) to the SDK workers connected to its gRPC endpoint.
//!
//! tests/python/entity_scenarios.py runs, on SQLite and on Azurite, function-based and
//! class-based entities: signals from a client and get state, a failing operation (rolled
//! back), an entity signalling another, calls from an orchestration (result and failure),
//! signals from an orchestration, and critical sections over two entities from concurrent
//! orchestrations (no money created or lost), and a Python orchestration calling an entity
//! written in Rust (registered in the worker, so its batches run there), and a client's
//! terminate of an orchestration inside a critical section (its entities then run later
//! signals: the runtime released them), and asserts every result. Plus SIGKILL of the SDK worker running an entity batch: another connected worker
//! runs it at once, and only its run is committed.
//!
//! Run as `scripts/with-python-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc
//! --test python_sdk_entities` (scripts/test.sh does).
#![allow(clippy::disallowed_methods, reason = "test code")]

mod common;

use std::time::Duration;

use common::script::{test_file, until_line, Script};
use common::sdk::SdkServer;
use common::Backend;

const COMMAND: &str =
    "scripts/with-azurite.sh cargo test -p taskhub-grpc --test python_sdk_entities";

fn python() -> String {
    taskhub_test_support::env::python_sdk(COMMAND)
}

/// An entity written in Rust, `rustcounter` (the Python SDK lowercases entity names): its
/// batches run in this worker, its callers are Python orchestrations.
fn rust_entities() -> taskhub::Registry {
    let mut reg = taskhub::Registry::new();
    reg.entity("rustcounter", |ctx: &mut taskhub::EntityContext| {
        let value: i64 = ctx.get_state_or_default()?;
        match ctx.operation_name() {
            "add" => {
                let n: i64 = ctx.input()?;
                ctx.set_state(&(value + n))?;
                Ok(value + n)
            }
            "get" => Ok(value),
            other => Err(taskhub::EntityError::new(format!(
                "rustcounter has no operation '{other}'"
            ))),
        }
    });
    reg
}

async fn run_scenarios(backend: Backend) {
    let python = python();
    let scenarios = Script::python(
        &python,
        "python/entity_scenarios.py",
        "all 9 Python SDK entity checks passed",
    );
    let server = SdkServer::start_with(backend, rust_entities()).await;
    common::script::run_and_stop(scenarios, server).await;
}

common::on_backends!(
    run_scenarios,
    python_sdk_entities_on_sqlite = Sqlite,
    python_sdk_entities_on_azurite = Azure
);

/// An SDK worker process (tests/python/entity_worker_process.py) named `name`.
fn worker_process(python: &str, addr: &str, name: &str) -> tokio::process::Child {
    common::script::spawn_worker(
        python,
        test_file("python/entity_worker_process.py"),
        addr,
        name,
    )
}

/// SIGKILL of the SDK worker running an entity batch: the batch goes to the other connected
/// worker at once (well under the entity timeout), which runs it; the killed worker's run left
/// nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sdk_workers_entity_batch_is_run_by_another_worker() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let python = python();
    let server = SdkServer::start(Backend::Sqlite).await;
    let addr = server.addr.to_string();
    let mut a = worker_process(&python, &addr, "A");
    let client = server.hub.client();
    let entity = taskhub::EntityId::new("marks", "k").unwrap();
    let mut lines = BufReader::new(a.stdout.take().unwrap()).lines();
    until_line(&mut lines, "worker A", "worker A started").await;
    client.signal_entity(&entity, "mark", "slow").await.unwrap();
    until_line(&mut lines, "worker A", "slow mark started by A").await;
    let mut b = worker_process(&python, &addr, "B");
    let killed = server.kill_once_another_connected(&mut a).await;
    loop {
        let state: Option<Vec<String>> = client.read_entity_state(&entity).await.unwrap();
        if let Some(state) = state {
            assert_eq!(state, ["B"], "only B's run was committed");
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "the batch was not run by B within 30 s (the entity timeout is 2 minutes)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.start_kill().unwrap();
    let _ = b.wait().await;
    server.stop().await;
}
