//! `taskhub hub delete` and `instances purge --time-budget` through the real binary: the
//! confirmation (typed on standard input, or `--yes`), the refusal while a worker holds a
//! partition, and the files gone afterwards; a purge whose budget runs out exits 3 and says so.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::io::Write as _;
use std::process::Stdio;

use common::*;

/// Runs `taskhub hub delete ARGS` with `answer` on standard input.
fn delete_with_answer(dir: &TempDir, args: &[&str], answer: &str) -> std::process::Output {
    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db")
        .arg(dir.db())
        .args(["hub", "delete"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_hub_is_deleted_only_when_confirmed_and_idle() {
    let dir = TempDir::new("hub-delete");
    ok(&dir, &["instances", "start", "HelloCities", "--id", "h-1"]);
    let db = dir.db();
    assert!(db.exists());

    // Not confirmed: nothing is deleted.
    let no = delete_with_answer(&dir, &[], "no\n");
    assert_eq!(no.status.code(), Some(1));
    let err = String::from_utf8_lossy(&no.stderr);
    assert!(err.contains("not confirmed"), "{err}");
    assert!(db.exists());

    // A worker holds the partitions: refused, even with --yes.
    let worker = WorkerChild::start(&dir);
    wait_until(STUCK, || {
        let out = json(&dir, &["partitions", "--json"]);
        out["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["owner"].is_string())
            .then_some(())
    });
    let held = fails(&dir, &["hub", "delete", "--yes"], 1);
    assert!(held.contains("stop them first"), "{held}");
    assert!(db.exists());
    worker.stop();

    // Confirmed on standard input: the file and its -wal/-shm are gone.
    let yes = delete_with_answer(&dir, &[], "yes\n");
    assert!(
        yes.status.success(),
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    assert!(String::from_utf8_lossy(&yes.stdout).contains("deleted the task hub at"));
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.clone().into_os_string();
        p.push(suffix);
        assert!(!std::path::Path::new(&p).exists(), "{p:?} is left");
    }
    let gone = fails(&dir, &["hub", "delete", "--yes"], 1);
    assert!(gone.contains("no task hub"), "{gone}");
}

/// `instances purge --name HelloCities --time-budget BUDGET`.
fn purge_hello_cities(budget: &str) -> [&str; 6] {
    [
        "instances",
        "purge",
        "--name",
        "HelloCities",
        "--time-budget",
        budget,
    ]
}

#[test]
fn a_purge_whose_budget_runs_out_exits_3_and_says_so() {
    let dir = TempDir::new("purge-budget");
    let worker = WorkerChild::start(&dir);
    for i in 0..3 {
        let id = format!("p-{i}");
        start_and_wait(&dir, "HelloCities", &id, "60");
    }
    worker.stop();
    let out = run(&dir, &purge_hello_cities("0s"));
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("purged 1 instance(s); the time budget ran out"),
        "{text}"
    );
    let rest = ok(&dir, &purge_hello_cities("1m"));
    assert!(rest.contains("purged 2 instance(s)"), "{rest}");
    let bad = fails(&dir, &purge_hello_cities("soon"), 1);
    assert!(bad.contains("--time-budget"), "{bad}");
}
