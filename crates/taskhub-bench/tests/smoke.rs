//! Every scenario runs at a tiny scale on the memory backend and prints valid JSON lines.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::process::Command;

#[test]
fn all_scenarios_emit_json_on_the_memory_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_taskhub-bench"))
        .args(["all", "--backend", "memory", "--scale", "0.002"])
        .output()
        .expect("run taskhub-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let scenarios: Vec<&str> = records
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(
        scenarios,
        [
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
            "idle"
        ]
    );
    for r in &records {
        assert_eq!(r["backend"], "memory", "{r}");
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
    let out = Command::new(env!("CARGO_BIN_EXE_taskhub-bench"))
        .args([
            "hello5",
            "--backend",
            "memory",
            "--scale",
            "0.01",
            "--workers",
            "2",
        ])
        .output()
        .expect("run taskhub-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let r: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
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
