//! `taskhub workers processes`: a running worker process is listed from the hub's process
//! registry with its kind, pid, schema version and build, live; after a graceful stop its
//! record is gone; records of dead processes are forgotten on request (`--forget`,
//! `--forget-stale`) and, after a day, by the next process to start.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;

#[test]
fn a_running_worker_is_listed_with_its_schema_version_and_forgotten_after_it_stops() {
    let dir = TempDir::new("processes");
    let worker = WorkerChild::start(&dir);
    let listed = json(&dir, &["workers", "processes", "--json"]);
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed}");
    let row = &rows[0];
    assert_eq!(row["kind"], "worker", "{row}");
    assert_eq!(
        row["schema_version"],
        taskhub_sqlite::schema::latest_version(),
        "{row}"
    );
    assert_eq!(row["build_version"], env!("CARGO_PKG_VERSION"), "{row}");
    assert_eq!(row["live"], true, "{row}");
    assert!(row["pid"].as_u64().unwrap() > 0, "{row}");

    let table = ok(&dir, &["workers", "processes"]);
    let id = row["id"].as_str().unwrap();
    assert!(table.contains("SCHEMA") && table.contains(id), "{table}");
    assert!(table.contains("live"), "{table}");

    worker.stop();
    let after = ok(&dir, &["workers", "processes"]);
    assert!(after.contains("no processes announced"), "{after}");
}

/// A record announced through a store whose clock reads `ago` before now: it looks as if
/// its process died that long ago without a clean stop.
fn announce_long_ago(dir: &TempDir, id: &str, ago: std::time::Duration) {
    use std::sync::Arc;
    use taskhub_storage::Clock as _;
    use taskhub_storage::{ManualClock, ProcessAnnouncement, ProcessKind, ProcessStore as _};
    // The CLI judges SQLite's records by the wall clock, which the system clock reads.
    let wall = taskhub_storage::SystemClock::new().now();
    let then =
        taskhub::Timestamp::from_millis(wall.as_millis() - u64::try_from(ago.as_millis()).unwrap());
    let mut options = taskhub_sqlite::SqliteOptions::new(dir.db());
    options.clock = Arc::new(ManualClock::new(then));
    let store = taskhub_sqlite::SqliteStore::open(options).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(store.announce_process(&ProcessAnnouncement {
        id: id.into(),
        kind: ProcessKind::Worker,
        host: "gone-box".into(),
        pid: 4242,
        build_version: "0.0.1".into(),
    }))
    .unwrap();
}

fn listed_ids(dir: &TempDir) -> Vec<String> {
    let listed = json(dir, &["workers", "processes", "--json"]);
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn stale_records_are_forgotten_by_id_or_all_at_once_and_live_ones_stay() {
    let dir = TempDir::new("processes-forget");
    // A killed worker's record stays, live for the liveness window.
    let killed = WorkerChild::start(&dir);
    let killed_id = listed_ids(&dir).pop().unwrap();
    drop(killed);
    announce_long_ago(&dir, "old-a", std::time::Duration::from_secs(600));
    announce_long_ago(&dir, "old-b", std::time::Duration::from_secs(900));
    let table = ok(&dir, &["workers", "processes"]);
    assert!(
        table.contains("old-a") && table.contains("stale"),
        "{table}"
    );

    let out = ok(&dir, &["workers", "processes", "--forget", "old-a"]);
    assert!(out.contains("forgot process old-a"), "{out}");
    let mut ids = listed_ids(&dir);
    ids.sort();
    let mut want = vec![killed_id.clone(), "old-b".to_owned()];
    want.sort();
    assert_eq!(ids, want);

    let err = fails(&dir, &["workers", "processes", "--forget", "old-a"], 1);
    assert!(err.contains("no process record \"old-a\""), "{err}");

    let out = ok(&dir, &["workers", "processes", "--forget-stale"]);
    assert!(out.contains("forgot 1 stale process record(s)"), "{out}");
    assert_eq!(listed_ids(&dir), vec![killed_id], "the live record stays");
}

#[test]
fn a_starting_worker_forgets_records_stale_for_a_day() {
    let dir = TempDir::new("processes-retention");
    // A first worker creates the hub; the store below opens the same file.
    WorkerChild::start(&dir).stop();
    announce_long_ago(&dir, "day-old", std::time::Duration::from_secs(25 * 3600));
    announce_long_ago(&dir, "hour-old", std::time::Duration::from_secs(3600));
    let worker = WorkerChild::start(&dir);
    let ids = listed_ids(&dir);
    assert!(!ids.contains(&"day-old".to_owned()), "{ids:?}");
    assert!(ids.contains(&"hour-old".to_owned()), "{ids:?}");
    assert_eq!(ids.len(), 2, "{ids:?}");
    worker.stop();
}
