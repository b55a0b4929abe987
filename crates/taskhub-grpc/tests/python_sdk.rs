//! The official Durable Task Python SDK's client (`durabletask`, pinned in
//! scripts/with-python-sdk.sh) against the gRPC endpoint of a Taskhub worker that runs Rust
//! orchestrations: tests/python/client_calls.py asserts every result; a non-zero exit fails
//! this test. It needs the SDK's venv: run it as
//! `scripts/with-python-sdk.sh cargo test -p taskhub-grpc --test python_sdk`
//! (scripts/test.sh does); without it, it fails saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::{Backend, Server};

async fn run_script(backend: Backend) {
    let python =
        taskhub_test_support::env::python_sdk("cargo test -p taskhub-grpc --test python_sdk");
    let server = Server::start(backend).await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_calls.py");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(server.addr.to_string())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the Python script did not finish within 5 minutes")
        .expect("cannot run the venv's python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python SDK script failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("Python SDK client checks passed"),
        "{stdout}"
    );
    server.stop().await;
}

common::on_backends!(
    run_script,
    the_python_sdk_client_on_sqlite = Sqlite,
    the_python_sdk_client_on_memory = Memory
);
