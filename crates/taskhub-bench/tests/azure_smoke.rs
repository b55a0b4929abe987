//! The bench's Azure backend at a tiny scale against the Azurite that `scripts/test.sh` starts
//! (`scripts/with-azurite.sh` exports `TASKHUB_TEST_AZURE_CONNECTION_STRING`).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

#[test]
fn every_azure_scenario_reports_storage_operations_by_kind() {
    let connection =
        taskhub_test_support::env::azure_connection_string("cargo test -p taskhub-bench");
    let run = common::run(
        &[
            "all",
            "--backend",
            "azure",
            "--scale",
            "0.001",
            "--idle-window",
            "1",
            "--pickup-gap",
            "0.2",
        ],
        &[("TASKHUB_TEST_AZURE_CONNECTION_STRING", &connection)],
    );
    let (records, stderr) = (&run.records, &run.stderr);
    run.assert_scenarios(
        "azure",
        &[
            "sequential",
            "hello5",
            "fanout",
            "fanout",
            "events",
            "latency",
            "idle",
            "idle-ops",
            "pickup",
        ],
    );
    for r in records {
        let ops = &r["azure_ops"];
        assert!(ops["total"].as_u64().unwrap() > 0, "{r}");
        let by_kind: u64 = ops
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "total")
            .map(|(_, v)| v.as_u64().unwrap())
            .sum();
        assert_eq!(by_kind, ops["total"].as_u64().unwrap(), "{r}");
    }
    let hello5 = &records[1];
    assert!(
        hello5["azure_ops"]["queue_put"].as_u64().unwrap() >= 5,
        "{hello5}"
    );
    assert!(
        hello5["azure_ops"]["table_batch"].as_u64().unwrap() >= 6,
        "{hello5}"
    );
    assert!(
        hello5["azure_ops_per_orchestration"].as_f64().unwrap() > 0.0,
        "{hello5}"
    );
    let idle = &records[7];
    assert!(
        idle["azure_ops_per_worker_minute"].as_f64().unwrap() > 0.0,
        "{idle}"
    );
    assert!(records[8]["p50_ms"].is_number(), "pickup reports latency");
    assert!(stderr.contains("azure ops/step"), "{stderr}");
}
