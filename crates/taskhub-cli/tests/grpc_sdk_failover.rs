//! Several Taskhub processes serving SDK workers (issue 21, item 4): two `taskhub worker
//! --grpc` processes on one SQLite hub, an official Python SDK worker connected to each. A
//! SIGKILL of one Taskhub process while orchestrations run: its partitions move to the other,
//! and the SDK worker connected to the survivor finishes every orchestration.
//!
//! Needs the Python SDK: `scripts/with-python-sdk.sh cargo test -p taskhub-cli --test
//! grpc_sdk_failover` (scripts/test.sh does).
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::calls;
use common::listening::{forward_stdout, grpc_worker, Reaped};
use common::sidecar::{completed_within, connect};
use common::{json, TempDir};

/// A Python SDK worker process (taskhub-grpc's tests/python/worker_process.py) named `name`;
/// its stdout lines go to `lines`.
fn sdk_worker(
    python: &str,
    addr: &str,
    name: &str,
    lines: std::sync::mpsc::Sender<String>,
) -> Reaped {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../taskhub-grpc/tests/python/worker_process.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(addr)
        .arg(name)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start the Python SDK worker");
    forward_stdout(&mut child, lines);
    Reaped(child)
}

fn owners(dir: &TempDir) -> HashSet<String> {
    json(dir, &["partitions", "--json"])["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["owner"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_taskhub_process_leaves_its_work_to_the_sdk_workers_of_the_other() {
    let python =
        taskhub_test_support::env::python_sdk("cargo test -p taskhub-cli --test grpc_sdk_failover");
    let dir = TempDir::new("grpc-failover");
    let (mut first, addr1) = grpc_worker(&dir, "127.0.0.1:0");
    let (second, addr2) = grpc_worker(&dir, "127.0.0.1:0");
    // Both hold partitions (the second takes its share through leases).
    let start = Instant::now();
    while owners(&dir).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the partitions never spread"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (tx, said) = std::sync::mpsc::channel();
    let _w1 = sdk_worker(&python, &addr1, "W1", tx.clone());
    let _w2 = sdk_worker(&python, &addr2, "W2", tx);
    let mut c = connect(&addr2).await;
    let ids: Vec<String> = (0..8).map(|i| format!("fo-{i}")).collect();
    for id in &ids {
        calls::start(&mut c, "two_steps", id, None).await;
    }
    // Kill the first Taskhub process once its SDK worker runs a slow step.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = said
            .recv_timeout(left)
            .expect("W1 started a slow step within 60 s");
        if line == "slow step started by W1" {
            break;
        }
    }
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    // Every orchestration completes, through the survivor and W2.
    for id in &ids {
        let st = completed_within(&mut c, id, Duration::from_secs(120)).await;
        let out: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap()).unwrap();
        assert_eq!(out.len(), 2, "{out:?}");
    }
    second.interrupt();
}
