//! Instance tags and the status of a given execution from the CLI: `instances start --tag`,
//! `instances list --tag`, `instances purge --tag`, tags in `instances show`, and
//! `instances show ID --execution EID` for an execution that continue-as-new replaced.

mod common;

use common::*;

#[test]
fn tags_filter_and_earlier_executions_from_the_cli() {
    let dir = TempDir::new("tags-executions");
    let worker = WorkerChild::start(&dir);

    // Monitor continues as new twice: three executions.
    let shown = ok(
        &dir,
        &[
            "instances",
            "start",
            "Monitor",
            r#"{"generation": 0, "generations": 3, "interval_ms": 10}"#,
            "--id",
            "mon-1",
            "--tag",
            "team=ops",
            "--tag",
            "env=prod",
            "--wait",
            "120",
        ],
    );
    assert!(shown.contains("Completed"), "{shown}");
    assert!(shown.contains("env=prod, team=ops"), "{shown}");
    ok(
        &dir,
        &[
            "instances",
            "start",
            "HelloCities",
            "--id",
            "hello-1",
            "--tag",
            "team=web",
            "--wait",
            "120",
        ],
    );

    let listed = json(&dir, &["instances", "list", "--tag", "team=ops", "--json"]);
    assert_eq!(instance_ids(&listed), ["mon-1"]);
    let listed = json(
        &dir,
        &[
            "instances",
            "list",
            "--tag",
            "team=ops",
            "--tag",
            "env=dev",
            "--json",
        ],
    );
    assert!(instance_ids(&listed).is_empty());

    let status = json(&dir, &["instances", "show", "mon-1", "--json"]);
    assert_eq!(status["tags"]["team"], "ops");
    let earlier = status["previous_executions"].as_array().unwrap();
    assert_eq!(earlier.len(), 2, "{status}");
    let first = earlier[0]["execution_id"].as_str().unwrap();
    let execution = json(
        &dir,
        &["instances", "show", "mon-1", "--execution", first, "--json"],
    );
    assert_eq!(execution["status"], "ContinuedAsNew");
    assert_eq!(execution["current"], false);
    assert_eq!(execution["input"]["generation"], 0);
    assert_eq!(execution["output"]["generation"], 1);
    let text = ok(&dir, &["instances", "show", "mon-1", "--execution", first]);
    assert!(text.contains("ContinuedAsNew"), "{text}");
    let current = status["execution_id"].as_str().unwrap();
    let execution = json(
        &dir,
        &[
            "instances",
            "show",
            "mon-1",
            "--execution",
            current,
            "--json",
        ],
    );
    assert_eq!(execution["status"], "Completed");
    assert_eq!(execution["current"], true);

    let err = fails(
        &dir,
        &["instances", "show", "mon-1", "--execution", "no-such"],
        1,
    );
    assert!(err.contains("has no execution 'no-such'"), "{err}");
    let err = fails(
        &dir,
        &["instances", "start", "HelloCities", "--tag", "bad key=1"],
        1,
    );
    assert!(err.contains("invalid tag"), "{err}");
    let err = fails(&dir, &["instances", "list", "--tag", "no-equals"], 1);
    assert!(err.contains("KEY=VALUE"), "{err}");

    let out = ok(&dir, &["instances", "purge", "--tag", "team=web"]);
    assert!(out.contains("purged 1 instance"), "{out}");
    let listed = json(&dir, &["instances", "list", "--json"]);
    assert_eq!(instance_ids(&listed), ["mon-1"]);
    worker.stop();
}
