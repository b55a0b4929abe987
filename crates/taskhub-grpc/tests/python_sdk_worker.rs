//! The official Durable Task Python SDK (`durabletask`, pinned in scripts/with-python-sdk.sh)
//! as a WORKER: a Taskhub worker with an empty registry hands every orchestration turn and
//! activity to the SDK workers connected to its gRPC endpoint.
//!
//! * tests/python/worker_scenarios.py runs orchestrations written with the SDK (sequence,
//!   fan-out/fan-in, sub-orchestration, timers, events before and after the wait, when_any
//!   with a timer, continue-as-new keeping events, retries of activities and
//!   sub-orchestrations, failures, custom status,
//!   version and tags, suspend/resume, terminate, a terminate output that is an object, restart
//!   with a new ID while running, query with paging, restart, purge) on
//!   SQLite and on Azurite, and asserts every result.
//! * tests/python/large_payloads.py: the SDK's large-payload option (a payload store whose
//!   tokens are not JSON) through Taskhub unchanged, on SQLite and on Azurite.
//! * SIGKILL of an SDK worker mid-orchestration: the activity it held goes to another
//!   connected worker at once, which finishes the orchestration.
//!
//! Run as `scripts/with-python-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc
//! --test python_sdk_worker` (scripts/test.sh does).
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::calls;
use common::script::{test_file, until_line, Script};
use common::sdk::SdkServer;
use common::Backend;
use tokio::io::{AsyncBufReadExt, BufReader};

const COMMAND: &str = "scripts/with-azurite.sh cargo test -p taskhub-grpc --test python_sdk_worker";

fn python() -> String {
    taskhub_test_support::env::python_sdk(COMMAND)
}

async fn run_scenarios(backend: Backend) {
    let python = python();
    let scenarios = Script::python(
        &python,
        "python/worker_scenarios.py",
        "Python SDK worker checks passed",
    );
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}

common::on_backends!(
    run_scenarios,
    python_sdk_workers_run_orchestrations_on_sqlite = Sqlite,
    python_sdk_workers_run_orchestrations_on_azurite = Azure
);

/// Issue 34: the SDK's large-payload option replaces every payload over its threshold with a
/// token that is not JSON (`blob:v1:<container>:<blob>`); Taskhub passes each through
/// unchanged, so the SDK turns it back into the payload on the other side
/// (tests/python/large_payloads.py), and holds the tokens as they were sent.
async fn large_payloads_pass_through_as_tokens(backend: Backend) {
    let python = python();
    let server = SdkServer::start(backend).await;
    let scenarios = Script::python(
        &python,
        "python/large_payloads.py",
        "all 2 Python SDK large-payload checks passed",
    )
    .within(Duration::from_secs(300));
    common::script::run(scenarios, &server.addr.to_string()).await;
    let mut c = server.client().await;
    let big = calls::get(&mut c, "big").await.unwrap();
    let token = |what: &str, v: Option<&str>| {
        let v = v.unwrap_or_else(|| panic!("{what}: none"));
        assert!(v.starts_with("blob:v1:taskhub-test:"), "{what}: {v}");
    };
    token("input", big.input.as_deref());
    token("output", big.output.as_deref());
    token("custom status", big.custom_status.as_deref());
    let small = calls::get(&mut c, "small").await.unwrap();
    assert_eq!(small.input.as_deref(), Some("\"small\""));
    server.stop().await;
}

common::on_backends!(
    large_payloads_pass_through_as_tokens,
    python_sdk_large_payloads_pass_through_as_tokens_on_sqlite = Sqlite,
    python_sdk_large_payloads_pass_through_as_tokens_on_azurite = Azure
);

/// An SDK worker process (tests/python/worker_process.py) named `name`.
fn worker_process(python: &str, addr: &str, name: &str) -> tokio::process::Child {
    common::script::spawn_worker(python, test_file("python/worker_process.py"), addr, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sdk_workers_activity_is_finished_by_another_worker() {
    let python = python();
    let server = SdkServer::start(Backend::Sqlite).await;
    let addr = server.addr.to_string();
    let mut a = worker_process(&python, &addr, "A");
    let mut c = server.client().await;
    calls::start(&mut c, "two_steps", "kill-me", None).await;
    // Worker A runs the slow step (it says so on its stdout).
    let mut lines = BufReader::new(a.stdout.take().unwrap()).lines();
    until_line(&mut lines, "worker A", "slow step started by A").await;
    let mut b = worker_process(&python, &addr, "B");
    let killed = server.kill_once_another_connected(&mut a).await;
    let st = calls::completed(&mut c, "kill-me").await;
    let output: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap()).unwrap();
    assert_eq!(output, ["step 1 by A", "slow step by B"], "{st:?}");
    // Handed over at once: well under the activity timeout (30 minutes).
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
    b.start_kill().unwrap();
    let _ = b.wait().await;
    server.stop().await;
}
