//! `taskhub partitions`, `workers` and `scale` against a running worker process: the table
//! shows its leases; offline, bump and prohibit move them; detect-stale and scale report.
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::listening::FAST_LEASES;
use common::*;

fn rows(dir: &TempDir) -> Vec<serde_json::Value> {
    json(dir, &["partitions", "--json"])["partitions"]
        .as_array()
        .unwrap()
        .clone()
}

fn owners(dir: &TempDir) -> Vec<Option<String>> {
    rows(dir)
        .iter()
        .map(|r| r["owner"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn partitions_are_shown_moved_and_monitored() {
    let dir = TempDir::new("partitions");
    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db").arg(dir.db()).args(FAST_LEASES).args([
        "--set",
        "max_queue_polling_interval=100ms",
        "worker",
    ]);
    let worker = WorkerChild::spawn(cmd);
    let name = worker
        .ready_line
        .split_whitespace()
        .nth(2)
        .unwrap()
        .to_owned();
    let wait = STUCK;

    // The table: every partition held by the worker, queues empty.
    let all = owners(&dir);
    assert_eq!(all.len(), 4);
    assert!(
        all.iter().all(|o| o.as_deref() == Some(name.as_str())),
        "{all:?}"
    );
    let table = ok(&dir, &["partitions"]);
    assert!(
        table.contains("PARTITION") && table.contains(&name),
        "{table}"
    );
    ok(&dir, &["partitions", "detect-stale", "--threshold", "60s"]);

    // Offline: the worker drains and releases it, nobody takes it; detect-stale ignores it.
    ok(&dir, &["partitions", "offline", "3"]);
    wait_until(wait, || (owners(&dir)[3].is_none()).then_some(()));
    assert_eq!(rows(&dir)[3]["offline"], true);
    ok(&dir, &["partitions", "detect-stale"]);
    ok(&dir, &["partitions", "online", "3"]);
    wait_until(wait, || owners(&dir)[3].is_some().then_some(()));

    // Bump: a new epoch fences the owner, which then claims the partition again.
    let before = rows(&dir)[0]["epoch"].as_u64().unwrap();
    let out = ok(&dir, &["partitions", "bump", "0"]);
    assert!(out.contains(&format!("epoch {}", before + 1)), "{out}");
    wait_until(wait, || {
        let r = &rows(&dir)[0];
        (r["owner"].as_str() == Some(name.as_str()) && r["epoch"].as_u64() == Some(before + 2))
            .then_some(())
    });

    // Prohibit: the worker hands everything back; detect-stale now fails; scale asks for a
    // worker once work is waiting.
    let listed = ok(&dir, &["workers", "prohibit", &name]);
    assert!(listed.contains(&name), "{listed}");
    wait_until(wait, || {
        owners(&dir).iter().all(Option::is_none).then_some(())
    });
    let stale = fails(&dir, &["partitions", "detect-stale"], 1);
    assert!(stale.contains("unowned"), "{stale}");
    ok(
        &dir,
        &["instances", "start", "HelloCities", "--id", "waiting"],
    );
    let rec = json(&dir, &["scale", "--samples", "2", "--interval", "100ms"]);
    assert_eq!(rec["current_workers"], 0, "{rec}");
    assert!(rec["recommended_workers"].as_u64().unwrap() >= 1, "{rec}");
    assert_eq!(rec["action"], "scale_out", "{rec}");

    // Allow again: the worker takes the partitions back and finishes the waiting instance.
    let listed = ok(&dir, &["workers", "allow", &name]);
    assert!(listed.contains("no prohibited workers"), "{listed}");
    wait_until(wait, || {
        let s = json(&dir, &["instances", "show", "waiting", "--json"]);
        (s["status"] == "Completed").then_some(())
    });
    let rec = json(&dir, &["scale", "--samples", "1"]);
    assert_eq!(rec["action"], "scale_in", "idle hub with one worker: {rec}");
    worker.stop();
}

#[test]
fn bad_partition_commands_are_clear_errors() {
    let dir = TempDir::new("partitions-bad");
    ok(&dir, &["instances", "start", "HelloCities", "--id", "x"]);
    let err = fails(&dir, &["partitions", "bump", "9"], 1);
    assert!(err.contains("partition 9 does not exist"), "{err}");
    let err = fails(
        &dir,
        &["partitions", "detect-stale", "--threshold", "soon"],
        1,
    );
    assert!(err.contains("--threshold"), "{err}");
    let err = fails(&dir, &["partitions", "resize", "17"], 1);
    assert!(err.contains("partition_count"), "{err}");
    let out = ok(&dir, &["partitions", "resize", "6"]);
    assert!(out.contains("partition count is now 6"), "{out}");
    assert_eq!(rows(&dir).len(), 6);
    ok(&dir, &["partitions", "resize", "2"]);
    let r = rows(&dir);
    assert!(r[2..].iter().all(|r| r["retiring"] == true), "{r:?}");
    let err = fails(&dir, &["scale", "--samples", "0"], 1);
    assert!(err.contains("--samples"), "{err}");
}
