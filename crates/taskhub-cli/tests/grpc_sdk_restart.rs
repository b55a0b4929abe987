//! SIGKILL of a Taskhub process with an SDK worker connected (issue 34, item 7): a `taskhub
//! worker --grpc` process on a SQLite hub, an official Python SDK worker
//! (taskhub-grpc's tests/python/worker_process.py), Go SDK worker (taskhub-grpc's tests/go
//! program, `worker` mode), JavaScript SDK worker (tests/js/kill_worker.js) or Java SDK worker
//! (tests/java KillWorker) connected to it, orchestrations running. The
//! Taskhub process is killed with SIGKILL while the SDK worker runs a slow step; a new one starts
//! on the same file and the same address, the SDK worker reconnects by itself, and every
//! orchestration completes with exactly the output it would have had without the kill.
//!
//! Needs the SDKs: `scripts/with-python-sdk.sh scripts/with-go-sdk.sh scripts/with-js-sdk.sh
//! scripts/with-java-sdk.sh cargo test -p taskhub-cli --test grpc_sdk_restart` (scripts/test.sh
//! does).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::listening::{forward_stdout, grpc_worker, Reaped};
use common::sidecar::completed_within;
use common::TempDir;
use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::CreateInstanceRequest;

/// How many orchestrations run through the kill.
const ORCHESTRATIONS: usize = 8;

/// A `taskhub worker --grpc ADDR` on `dir`'s hub, once its endpoint listens on `addr`.
fn taskhub_worker(dir: &TempDir, addr: &str) -> Reaped {
    let (worker, named) = grpc_worker(dir, addr);
    assert_eq!(named, addr);
    worker
}

/// A free port on 127.0.0.1 (bound, then released for the Taskhub process to bind).
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// How to start an SDK worker process: `program args... HOST:PORT NAME [SLOW_SECONDS]`, whose
/// orchestration `orchestration` runs a quick step, then a slow one of a few seconds (printing
/// "slow step started by NAME"), and answers `["step 1 by NAME", "slow step by NAME"]`.
struct Sdk {
    program: String,
    args: Vec<String>,
    /// After the name (the Go program takes the slow step's seconds).
    tail: Vec<String>,
    orchestration: &'static str,
    env: Vec<(&'static str, String)>,
}

/// The Python SDK: taskhub-grpc's tests/python/worker_process.py.
fn python() -> Sdk {
    Sdk {
        program: taskhub_test_support::env::python_sdk(
            "cargo test -p taskhub-cli --test grpc_sdk_restart",
        ),
        args: vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../taskhub-grpc/tests/python/worker_process.py")
            .display()
            .to_string()],
        tail: Vec::new(),
        orchestration: "two_steps",
        env: Vec::new(),
    }
}

/// The Go SDK: taskhub-grpc's tests/go program in its worker-only mode (worker_mode.go).
fn go() -> Sdk {
    Sdk {
        program: taskhub_test_support::env::go_sdk(
            "scripts/with-go-sdk.sh cargo test -p taskhub-cli --test grpc_sdk_restart",
        ),
        args: vec!["worker".into()],
        tail: vec!["4".into()],
        orchestration: "TwoSteps",
        env: Vec::new(),
    }
}

/// The JavaScript SDK: taskhub-grpc's tests/js/kill_worker.js.
fn javascript() -> Sdk {
    Sdk {
        program: "node".into(),
        args: vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../taskhub-grpc/tests/js/kill_worker.js")
            .display()
            .to_string()],
        tail: vec!["4".into()],
        orchestration: "TwoSteps",
        env: vec![(
            "NODE_PATH",
            taskhub_test_support::env::js_sdk(
                "scripts/with-js-sdk.sh cargo test -p taskhub-cli --test grpc_sdk_restart",
            ),
        )],
    }
}

/// The Java SDK: taskhub-grpc's tests/java KillWorker.
fn java() -> Sdk {
    Sdk {
        program: "java".into(),
        args: vec!["KillWorker".into()],
        // It runs one work item at a time: a shorter slow step keeps the run short.
        tail: vec!["2".into()],
        orchestration: "TwoSteps",
        env: vec![(
            "CLASSPATH",
            taskhub_test_support::env::java_sdk(
                "scripts/with-java-sdk.sh cargo test -p taskhub-cli --test grpc_sdk_restart",
            ),
        )],
    }
}

/// An SDK worker process named `name`; its stdout lines go to `lines`.
fn sdk_worker(sdk: &Sdk, addr: &str, name: &str, lines: mpsc::Sender<String>) -> Reaped {
    let mut child = Command::new(&sdk.program)
        .args(&sdk.args)
        .arg(addr)
        .arg(name)
        .args(&sdk.tail)
        .envs(sdk.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the SDK worker {}: {e}", sdk.program));
    forward_stdout(&mut child, lines);
    Reaped(child)
}

fn said(lines: &mpsc::Receiver<String>, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("the SDK worker did not print {want:?} within 60 s"));
        if line == want {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_python_orchestration() {
    a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_orchestration(python()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_go_orchestration() {
    a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_orchestration(go()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_javascript_orchestration(
) {
    a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_orchestration(javascript())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_java_orchestration() {
    a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_orchestration(java()).await;
}

async fn a_killed_taskhub_process_restarted_on_the_same_hub_finishes_every_orchestration(sdk: Sdk) {
    let dir = TempDir::new("grpc-restart");
    let addr = free_addr();
    let mut first = taskhub_worker(&dir, &addr);
    let (tx, lines) = mpsc::channel();
    let _w = sdk_worker(&sdk, &addr, "W", tx);
    said(&lines, "worker W started");
    let mut c = TaskHubSidecarServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let ids: Vec<String> = (0..ORCHESTRATIONS)
        .map(|i| format!("restart-{i}"))
        .collect();
    for id in &ids {
        c.start_instance(CreateInstanceRequest {
            instance_id: id.clone(),
            name: sdk.orchestration.into(),
            ..CreateInstanceRequest::default()
        })
        .await
        .unwrap();
    }
    // Kill the Taskhub process while its SDK worker runs a slow step.
    said(&lines, "slow step started by W");
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    drop(c);
    // A new process on the same file and address; the SDK worker reconnects by itself.
    let second = taskhub_worker(&dir, &addr);
    let mut c = TaskHubSidecarServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    for id in &ids {
        let st = completed_within(&mut c, id, Duration::from_secs(60)).await;
        let out: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap()).unwrap();
        assert_eq!(out, ["step 1 by W", "slow step by W"], "{id}");
    }
    second.interrupt();
}
