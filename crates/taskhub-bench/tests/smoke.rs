//! Every scenario runs at a tiny scale on the memory backend and prints valid JSON lines.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::process::Command;

mod common;

#[test]
fn all_scenarios_emit_json_on_the_memory_backend() {
    let run = common::run(&["all", "--backend", "memory", "--scale", "0.002"], &[]);
    let (records, stderr) = (&run.records, &run.stderr);
    run.assert_scenarios(
        "memory",
        &[
            "sequential",
            "sequential-many",
            "fanout",
            "fanout",
            "hello5",
            "events",
            "entities-one",
            "entities-many",
            "entities-call",
            "timers",
            "latency",
            "history",
            "history",
            "grpc",
            "grpc",
            "grpc",
            "grpc",
            "grpc",
            "large-starts",
            "idle",
        ],
    );
    for r in records {
        assert!(r["n"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["seconds"].as_f64().unwrap() >= 0.0, "{r}");
        assert!(
            r.get("durability").is_none(),
            "memory has no durability: {r}"
        );
        // The dispatcher alone uses no storage (only an idle worker's polls, if any).
        if r["variant"] != "dispatcher only (no runtime)" {
            assert!(r["storage_ops_per_step"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    assert!(records[9]["p99_ms"].is_number(), "timers report lateness");
    assert!(
        records[8]["p50_ms"].is_number(),
        "entities-call reports its round trip"
    );
    assert!(
        stderr.contains("scenario"),
        "the table goes to stderr: {stderr}"
    );
}

#[test]
fn several_workers_share_the_hub_and_a_bad_count_is_refused() {
    let run = common::run(
        &[
            "hello5",
            "--backend",
            "memory",
            "--scale",
            "0.01",
            "--workers",
            "2",
        ],
        &[],
    );
    let r = &run.records[0];
    assert_eq!(r["scenario"], "hello5", "{r}");
    assert_eq!(
        r["activities"].as_u64(),
        Some(r["n"].as_u64().unwrap() * 5),
        "{r}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_taskhub-bench"))
        .args(["sequential", "--backend", "memory", "--workers", "0"])
        .output()
        .expect("run taskhub-bench");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--workers must be 1 to 16"));
}
