//! `taskhub entities list | show | signal | delete` against a `taskhub worker` process (which
//! runs the demo's `DemoCounter` entity).
#![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;

fn state(dir: &TempDir, id: &str) -> Option<serde_json::Value> {
    let out = run(dir, &["entities", "show", id]);
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(v["state"].clone())
}

#[test]
fn entities_can_be_signalled_listed_shown_deleted_and_cleaned() {
    let dir = TempDir::new("entities");
    let worker = WorkerChild::start(&dir);
    let id = "@DemoCounter@cli";
    ok(&dir, &["entities", "signal", id, "add", "5"]);
    ok(&dir, &["entities", "signal", id, "add", "--", "-2"]);
    ok(&dir, &["entities", "signal", id, "add", "7"]);
    wait_until(STUCK, || {
        (state(&dir, id)? == serde_json::json!(10)).then_some(())
    });

    let listed = json(
        &dir,
        &["entities", "list", "--name", "DemoCounter", "--json"],
    );
    assert_eq!(listed["entities"][0]["id"], id, "{listed}");
    assert_eq!(listed["entities"][0]["state"], 10, "{listed}");
    let table = ok(&dir, &["entities", "list"]);
    assert!(table.contains(id) && table.contains("1 entity"), "{table}");

    let out = ok(&dir, &["entities", "delete", id]);
    assert!(out.contains("deleting the state"), "{out}");
    wait_until(STUCK, || {
        (state(&dir, id)? == serde_json::Value::Null).then_some(())
    });
    let table = ok(&dir, &["entities", "list"]);
    assert!(table.contains("0 entities"), "{table}");
    let all = ok(&dir, &["entities", "list", "--all"]);
    assert!(all.contains(id), "{all}");
    let out = ok(&dir, &["entities", "delete", "--clean", "--min-idle", "0s"]);
    assert!(out.contains("removed 1 empty entity"), "{out}");
    let err = fails(&dir, &["entities", "show", id], 1);
    assert!(err.contains("not found"), "{err}");

    let err = fails(&dir, &["entities", "show", "DemoCounter"], 1);
    assert!(
        err.contains("invalid entity ID") && err.contains("@name@key"),
        "{err}"
    );
    let err = fails(&dir, &["entities", "delete"], 1);
    assert!(err.contains("--clean"), "{err}");
    let err = fails(&dir, &["entities", "signal", id, "add", "{not json"], 1);
    assert!(err.contains("JSON") || err.contains("json"), "{err}");
    worker.stop();
}
