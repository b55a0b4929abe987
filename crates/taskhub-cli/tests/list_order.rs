//! `taskhub instances list --order`: by instance ID (the default) or by creation time, newest or
//! oldest first, page by page; an unknown order is one clear error line.

mod common;

use common::*;

fn ids(dir: &TempDir, args: &[&str]) -> Vec<String> {
    let mut all = vec!["instances", "list", "--json"];
    all.extend_from_slice(args);
    instance_ids(&json(dir, &all))
}

#[test]
fn instances_are_listed_by_creation_time_when_asked() {
    let dir = TempDir::new("list-order");
    // Created in this order, one after another (no worker: they stay Pending).
    let created = ["m-2", "z-1", "a-3"];
    for id in created {
        ok(&dir, &["instances", "start", "HelloCities", "--id", id]);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(ids(&dir, &[]), ["a-3", "m-2", "z-1"], "by ID by default");
    assert_eq!(ids(&dir, &["--order", "oldest"]), created);
    assert_eq!(ids(&dir, &["--order", "newest"]), ["a-3", "z-1", "m-2"]);
    // Page by page, newest first.
    let page = json(
        &dir,
        &[
            "instances",
            "list",
            "--order",
            "newest",
            "--page-size",
            "2",
            "--json",
        ],
    );
    let token = page["continuation"].as_str().unwrap().to_owned();
    let rest = ids(
        &dir,
        &[
            "--order",
            "newest",
            "--page-size",
            "2",
            "--continuation",
            &token,
        ],
    );
    assert_eq!(rest, ["m-2"]);
    assert_eq!(
        ids(&dir, &["--order", "newest", "--page-size", "1", "--all"]),
        ["a-3", "z-1", "m-2"]
    );
    let err = fails(&dir, &["instances", "list", "--order", "name"], 1);
    assert!(
        err.contains("--order must be id, newest or oldest"),
        "{err}"
    );
}

#[test]
fn instances_are_filtered_by_completion_and_update_time() {
    let dir = TempDir::new("time-filters");
    let worker = WorkerChild::start(&dir);
    for id in ["done-1", "done-2"] {
        start_and_wait(&dir, "HelloCities", id, "60");
    }
    // An approval waits for its event: it stays Running.
    ok(
        &dir,
        &[
            "instances",
            "start",
            "Approval",
            "--id",
            "waiting",
            r#"{"timeout_ms": 600000}"#,
        ],
    );
    wait_until(STUCK, || {
        let st = json(&dir, &["instances", "show", "waiting", "--json"]);
        (st["status"] == "Running").then_some(())
    });
    let mut finished = ids(&dir, &["--completed-from", "0"]);
    finished.sort();
    assert_eq!(
        finished,
        ["done-1", "done-2"],
        "a running instance never matches"
    );
    assert!(ids(&dir, &["--completed-to", "0"]).is_empty());
    assert_eq!(
        ids(&dir, &["--updated-from", "0"]).len(),
        3,
        "every instance was updated after 1970"
    );
    assert!(ids(&dir, &["--updated-from", "2999-01-01T00:00:00Z"]).is_empty());
    let purged = ok(
        &dir,
        &[
            "instances",
            "purge",
            "--completed-to",
            "2999-01-01T00:00:00Z",
        ],
    );
    assert!(purged.contains("purged 2 instance(s)"), "{purged}");
    assert_eq!(ids(&dir, &[]), ["waiting"]);
    let bad = fails(&dir, &["instances", "list", "--completed-from", "soon"], 1);
    assert!(bad.contains("--completed-from"), "{bad}");
    worker.stop();
}
