//! `taskhub instances list` lists orchestrations only unless `--include-entities` is given,
//! and a page is full even when entities sort among the orchestrations.

mod common;

use common::*;

#[test]
fn instances_list_leaves_entities_out_unless_asked() {
    let dir = TempDir::new("instances-entities");
    let worker = WorkerChild::start(&dir);
    for key in ["a", "b", "c"] {
        ok(
            &dir,
            &[
                "entities",
                "signal",
                &format!("@DemoCounter@{key}"),
                "add",
                "1",
            ],
        );
    }
    wait_until(STUCK, || {
        let listed = json(&dir, &["entities", "list", "--json"]);
        (listed["entities"].as_array()?.len() == 3).then_some(())
    });
    worker.stop();
    // Orchestrations on either side of the entities in ID order ('@' sorts between them).
    for id in ["0-first", "z-last"] {
        ok(&dir, &["instances", "start", "NotRegistered", "--id", id]);
    }

    let listed = json(&dir, &["instances", "list", "--json"]);
    assert_eq!(instance_ids(&listed), ["0-first", "z-last"], "{listed}");
    let table = ok(&dir, &["instances", "list"]);
    assert!(!table.contains("@DemoCounter@"), "{table}");

    // One row a page: the page after "0-first" is "z-last", not an empty page.
    let first = json(&dir, &["instances", "list", "--page-size", "1", "--json"]);
    assert_eq!(instance_ids(&first), ["0-first"], "{first}");
    let second = next_single_page(&dir, &first);
    assert_eq!(instance_ids(&second), ["z-last"], "{second}");

    let all = json(&dir, &["instances", "list", "--include-entities", "--json"]);
    assert_eq!(
        instance_ids(&all),
        [
            "0-first",
            "@DemoCounter@a",
            "@DemoCounter@b",
            "@DemoCounter@c",
            "z-last"
        ],
        "{all}"
    );
}
