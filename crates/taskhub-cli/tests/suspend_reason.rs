//! `taskhub instances show` names the suspension reason of a suspended instance.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn show_names_the_suspension_reason() {
    let dir = TempDir::new("suspend-reason");
    let _worker = WorkerChild::start(&dir);
    start_running_approval(&dir, "s-1");
    ok(
        &dir,
        &[
            "instances",
            "suspend",
            "s-1",
            "--reason",
            "waiting for audit",
        ],
    );
    wait_until(Duration::from_secs(20), || {
        (status(&dir, "s-1") == "Suspended").then_some(())
    });
    let text = ok(&dir, &["instances", "show", "s-1"]);
    assert!(text.contains("waiting for audit"), "{text}");
    let shown = json(&dir, &["instances", "show", "s-1", "--json"]);
    assert_eq!(shown["suspend_reason"], "waiting for audit");
    assert!(shown["output"].is_null(), "{shown}");
}
