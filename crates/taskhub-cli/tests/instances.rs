//! `taskhub instances ...` against a `taskhub worker` child process: start, list, show,
//! history, raise, suspend, resume, terminate and purge.

mod common;

use common::*;

#[test]
fn start_list_show_history_raise_terminate_purge_round_trip() {
    let dir = TempDir::new("instances");
    let worker = WorkerChild::start(&dir);

    // start --wait prints the ID and the finished instance.
    let out = start_and_wait(&dir, "HelloCities", "hello-1", "20");
    assert!(out.starts_with("hello-1\n"), "{out}");
    assert!(out.contains("Completed"), "{out}");
    assert!(out.contains("Hello Tokyo!"), "{out}");

    // show --json has the output; history has one line per event.
    let shown = json(&dir, &["instances", "show", "hello-1", "--json"]);
    assert_eq!(shown["output"][2], "Hello London!");
    let history = ok(&dir, &["instances", "history", "hello-1"]);
    assert!(
        history.contains("ExecutionStarted 'HelloCities'"),
        "{history}"
    );
    assert_eq!(history.matches("TaskScheduled").count(), 3, "{history}");
    assert!(history.contains("ExecutionCompleted"), "{history}");
    let events = json(&dir, &["instances", "history", "hello-1", "--json"]);
    assert_eq!(events.as_array().unwrap().len(), history.lines().count());

    // An approval waits for its event: suspend, resume, then raise it.
    start_running_approval(&dir, "approve-1");
    ok(&dir, &["instances", "suspend", "approve-1"]);
    wait_status(&dir, "approve-1", "Suspended");
    ok(&dir, &["instances", "resume", "approve-1"]);
    wait_status(&dir, "approve-1", "Running");
    ok(
        &dir,
        &[
            "instances",
            "raise",
            "approve-1",
            "approval",
            r#"{"approver":"bob"}"#,
        ],
    );
    wait_status(&dir, "approve-1", "Completed");
    let shown = json(&dir, &["instances", "show", "approve-1", "--json"]);
    assert_eq!(shown["output"], "approved by bob");
    assert_eq!(shown["custom_status"], "approved");

    // Another one is terminated.
    start_running_approval(&dir, "approve-2");
    ok(
        &dir,
        &[
            "instances",
            "terminate",
            "approve-2",
            "--reason",
            "not needed",
        ],
    );
    wait_status(&dir, "approve-2", "Terminated");
    let text = ok(&dir, &["instances", "show", "approve-2"]);
    assert!(text.contains("not needed"), "{text}");

    // list: filters, paging, --all.
    let all = ok(&dir, &["instances", "list"]);
    assert!(all.contains("3 instance(s)"), "{all}");
    let completed = json(
        &dir,
        &["instances", "list", "--status", "Completed", "--json"],
    );
    assert_eq!(completed["instances"].as_array().unwrap().len(), 2);
    let by_name = json(&dir, &["instances", "list", "--name", "Approval", "--json"]);
    assert_eq!(by_name["instances"].as_array().unwrap().len(), 2);
    let page = json(&dir, &["instances", "list", "--page-size", "1", "--json"]);
    assert_eq!(page["instances"].as_array().unwrap().len(), 1);
    let next = next_single_page(&dir, &page);
    assert_eq!(next["instances"][0]["instance_id"], "approve-2");
    let paged = json(
        &dir,
        &["instances", "list", "--page-size", "1", "--all", "--json"],
    );
    assert_eq!(paged["instances"].as_array().unwrap().len(), 3);
    let none = json(
        &dir,
        &[
            "instances",
            "list",
            "--created-to",
            "2000-01-01T00:00:00Z",
            "--json",
        ],
    );
    assert_eq!(none["instances"].as_array().unwrap().len(), 0);

    // purge one by ID, then by filter.
    ok(&dir, &["instances", "purge", "hello-1"]);
    let stderr = fails(&dir, &["instances", "show", "hello-1"], 1);
    assert!(stderr.contains("not found"), "{stderr}");
    let out = ok(
        &dir,
        &[
            "instances",
            "purge",
            "--status",
            "Completed",
            "--created-to",
            "4000000000000",
        ],
    );
    assert!(out.contains("purged 1 instance(s)"), "{out}");
    let left = json(&dir, &["instances", "list", "--json"]);
    assert_eq!(left["instances"][0]["instance_id"], "approve-2");
    assert_eq!(left["instances"].as_array().unwrap().len(), 1);

    let stopped = worker.stop();
    assert!(stopped.contains("stopped"), "{stopped}");
}
