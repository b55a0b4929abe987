//! `instances start --wait` exits 0 only when the instance Completed; an instance that ended
//! Failed or Terminated exits 4 (its status is printed either way), an error 1.

mod common;

use std::process::Stdio;

use common::*;

#[test]
fn wait_exits_4_when_the_instance_fails_or_is_terminated_and_0_when_it_completes() {
    let dir = TempDir::new("wait-exit");
    let worker = WorkerChild::start(&dir);

    // Completed: 0, and the status is shown.
    let out = start_and_wait(&dir, "HelloCities", "ok-1", "180");
    assert!(out.contains("Completed"), "{out}");

    // Failed (`Square` of 2^32 overflows, a non-retryable failure): 4, the status on stdout
    // and one line on stderr.
    let failed = run(
        &dir,
        &[
            "instances",
            "start",
            "SquareChild",
            "4294967296",
            "--id",
            "f-1",
            "--wait",
            "180",
        ],
    );
    let stdout = String::from_utf8_lossy(&failed.stdout);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Failed") && stdout.contains("overflows"),
        "{stdout}"
    );
    assert!(
        stderr.contains("instance 'f-1' did not complete: it ended Failed"),
        "{stderr}"
    );

    // Terminated while the start waits: 4.
    let waiting = on_file(&dir, &dir.db())
        .args([
            "instances",
            "start",
            "Approval",
            r#"{"timeout_ms": 600000}"#,
        ])
        .args(["--id", "t-1", "--wait", "180"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(STUCK, || {
        // Not found until the waiting start has written it.
        let out = run(&dir, &["instances", "show", "t-1", "--json"]);
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (status["status"] == "Running").then_some(())
    });
    ok(
        &dir,
        &["instances", "terminate", "t-1", "--reason", "enough"],
    );
    let terminated = waiting.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&terminated.stderr);
    assert_eq!(terminated.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("it ended Terminated"), "{stderr}");
    assert!(String::from_utf8_lossy(&terminated.stdout).contains("Terminated"));

    // A wait that runs out is an error (1), not "did not complete".
    let timed_out = fails(
        &dir,
        &[
            "instances",
            "start",
            "Approval",
            r#"{"timeout_ms": 600000}"#,
            "--wait",
            "0",
        ],
        1,
    );
    assert!(!timed_out.contains("did not complete"), "{timed_out}");
    worker.stop();
}
