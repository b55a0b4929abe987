//! `taskhub workers processes`: a running worker process is listed from the hub's process
//! registry with its kind, pid, schema version and build, live; after a graceful stop its
//! record is gone.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

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
