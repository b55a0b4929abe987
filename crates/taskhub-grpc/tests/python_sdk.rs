//! The official Durable Task Python SDK's client (`durabletask`, pinned in
//! scripts/with-python-sdk.sh) against the gRPC endpoint of a Taskhub worker that runs Rust
//! orchestrations: tests/python/client_calls.py asserts every result; a non-zero exit fails
//! this test. It needs the SDK's venv: run it as
//! `scripts/with-python-sdk.sh cargo test -p taskhub-grpc --test python_sdk`
//! (scripts/test.sh does); without it, it fails saying so.

mod common;

use std::time::Duration;

use common::script::Script;
use common::{Backend, Server};

async fn run_script(backend: Backend) {
    let python =
        taskhub_test_support::env::python_sdk("cargo test -p taskhub-grpc --test python_sdk");
    let server = Server::start(backend).await;
    let script = Script::python(
        &python,
        "python/client_calls.py",
        "Python SDK client checks passed",
    )
    .within(Duration::from_secs(300));
    common::script::run(script, &server.addr.to_string()).await;
    server.stop().await;
}

common::on_backends!(
    run_script,
    the_python_sdk_client_on_sqlite = Sqlite,
    the_python_sdk_client_on_memory = Memory
);
