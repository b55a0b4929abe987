//! `taskhub instances raise ... --event-id ID`: a retried raise with one ID is recorded once.

mod common;

use std::time::Duration;

use common::*;

fn raised(dir: &TempDir, id: &str, name: &str) -> usize {
    let history = ok(dir, &["instances", "history", id]);
    history.matches(&format!("EventRaised '{name}'")).count()
}

#[test]
fn a_raise_retried_with_one_event_id_is_recorded_once() {
    let dir = TempDir::new("raise-event-id");
    let _worker = WorkerChild::start(&dir);
    start_running_approval(&dir, "a-1");
    // Suspended, the instance records events without consuming them.
    ok(&dir, &["instances", "suspend", "a-1"]);
    wait_until(Duration::from_secs(20), || {
        (status(&dir, "a-1") == "Suspended").then_some(())
    });
    let approve = |key: &str| {
        ok(
            &dir,
            &[
                "instances",
                "raise",
                "a-1",
                "approval",
                r#"{"approver":"bob"}"#,
                "--event-id",
                key,
            ],
        )
    };
    approve("k1");
    approve("k1");
    ok(
        &dir,
        &["instances", "raise", "a-1", "other", "--event-id", "k2"],
    );
    ok(
        &dir,
        &["instances", "raise", "a-1", "other", "--event-id", "k3"],
    );
    wait_until(Duration::from_secs(20), || {
        (raised(&dir, "a-1", "other") == 2).then_some(())
    });
    assert_eq!(raised(&dir, "a-1", "approval"), 1, "same ID: applied once");
    ok(&dir, &["instances", "resume", "a-1"]);
    wait_until(Duration::from_secs(20), || {
        (status(&dir, "a-1") == "Completed").then_some(())
    });
    let err = fails(
        &dir,
        &["instances", "raise", "a-1", "other", "--event-id", ""],
        1,
    );
    assert!(err.contains("event ID"), "{err}");
}
