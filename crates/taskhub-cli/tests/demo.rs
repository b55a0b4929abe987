//! `taskhub demo` runs every workload on a fresh file, prints the table and exits 0.

mod common;

use common::*;

#[test]
fn demo_runs_every_workload_and_prints_the_table() {
    let dir = TempDir::new("demo");
    let db = dir.0.join("demo.db");
    // A leftover file from an earlier run is replaced, not reused.
    std::fs::write(&db, b"not a database").unwrap();
    let out = run_on(&dir, &db, &["demo", "--fan-out", "50"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("started fresh: deleted"), "{stdout}");
    for id in [
        "demo-hello",
        "demo-fan-out",
        "demo-approval-granted",
        "demo-approval-timeout",
        "demo-monitor",
        "demo-sub-orchestrations",
        "demo-entity",
        "demo-retry",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}: {stdout}"));
        assert!(line.contains("Completed") && line.ends_with("ok"), "{line}");
    }
    // 1² + … + 50² = 42925
    assert!(stdout.contains("Completed: 42925"), "{stdout}");
    assert!(stdout.contains("\"timed out\""), "{stdout}");
    assert!(stdout.contains("activities ("), "{stdout}");
    assert!(
        stdout.contains("All 8 demo instances finished as expected."),
        "{stdout}"
    );

    // The demo's file is a normal task hub the admin commands can read.
    let listed = run_on(
        &dir,
        &db,
        &["instances", "list", "--prefix", "demo-sub-orchestrations:"],
    );
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(listed.contains("4 instance(s)"), "{listed}");
}

#[test]
fn demo_reports_an_instance_that_does_not_finish_and_exits_non_zero() {
    let dir = TempDir::new("demo-timeout");
    // The unapproved approval waits 2 s; giving up after 1 s must fail the demo honestly.
    let out = run_on(
        &dir,
        &dir.0.join("demo.db"),
        &["demo", "--fan-out", "10", "--timeout-secs", "1"],
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("demo-approval-timeout"))
        .unwrap();
    assert!(row.contains("Running") && row.ends_with("FAILED"), "{row}");
    assert!(
        stderr.contains("FAILED demo-approval-timeout: did not finish within 1s (status Running)"),
        "{stderr}"
    );
    assert!(stderr.contains("did not finish as expected"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn demo_on_three_worker_processes_survives_a_kill_a_stop_and_a_join() {
    let dir = TempDir::new("demo-workers");
    let db = dir.0.join("demo.db");
    let out = run_on(&dir, &db, &["demo", "--workers", "3", "--fan-out", "50"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let started = stdout.matches(" started (pid ").count();
    assert_eq!(started, 4, "three workers, then one joins: {stdout}");
    assert!(stdout.contains("killed with SIGKILL"), "{stdout}");
    assert!(stdout.contains("stopped gracefully"), "{stdout}");
    assert!(
        stdout.contains("partitions  0:"),
        "ownership is shown: {stdout}"
    );
    assert!(stdout.contains("on 3 worker processes"), "{stdout}");
    assert!(stdout.contains("Completed: 42925"), "{stdout}");
    assert!(
        stdout.contains("All 8 demo instances finished as expected."),
        "{stdout}"
    );
    let err = run_on(&dir, &db, &["demo", "--workers", "0"]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("--workers must be 1 to 16"));
}
