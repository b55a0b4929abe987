//! `instances start --version V`: a versioned start is run by a `taskhub worker` whose
//! registry has the orchestration only without a version (the fallback for any version), and
//! the worker's `worker_version`/`version_match` decide which versions it takes.

mod common;

use common::*;

fn status(dir: &TempDir, id: &str) -> serde_json::Value {
    json(
        dir,
        &["--partition-count", "1", "instances", "show", id, "--json"],
    )
}

#[test]
fn a_strict_version_2_worker_runs_the_version_2_start_and_leaves_version_1() {
    let dir = TempDir::new("start-version");
    // One partition: both starts are in one control queue, v1's first, so the worker has
    // dequeued (and given back) v1's start before it runs v2's.
    let start = |id: &str, version: &str| {
        let out = ok(
            &dir,
            &[
                "--partition-count",
                "1",
                "instances",
                "start",
                "HelloCities",
                "--version",
                version,
                "--id",
                id,
            ],
        );
        assert_eq!(out.trim(), id);
    };
    start("v-1", "1");
    start("v-2", "2");
    assert_eq!(status(&dir, "v-1")["version"], "1");
    assert_eq!(status(&dir, "v-2")["version"], "2");

    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db").arg(dir.db()).args([
        "--partition-count",
        "1",
        "--set",
        "max_queue_polling_interval=100ms",
        "--set",
        "worker_version=2",
        "--set",
        "version_match=strict",
        "worker",
    ]);
    let worker = WorkerChild::spawn(cmd);

    let done = wait_until(STUCK, || {
        let s = status(&dir, "v-2");
        (s["status"] != "Pending" && s["status"] != "Running").then_some(s)
    });
    assert_eq!(done["status"], "Completed", "{done:#}");
    assert_eq!(done["version"], "2");
    assert_eq!(
        done["output"],
        serde_json::json!(["Hello Tokyo!", "Hello Seattle!", "Hello London!"])
    );
    // Version 1 is not this worker's: its start was given back, it has not run.
    let v1 = status(&dir, "v-1");
    assert_eq!(v1["status"], "Pending", "{v1:#}");
    worker.stop();

    // A worker without a version check runs it (the unversioned registration, again).
    let worker = WorkerChild::start(&dir);
    let done = wait_until(STUCK, || {
        let s = status(&dir, "v-1");
        (s["status"] == "Completed").then_some(s)
    });
    assert_eq!(done["version"], "1");
    worker.stop();
}
