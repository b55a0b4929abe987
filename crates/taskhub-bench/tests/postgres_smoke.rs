//! The bench on PostgreSQL at a tiny scale, against the server `scripts/test.sh` starts
//! (`scripts/with-postgres.sh`, with `pg_stat_statements` loaded through
//! `TASKHUB_TEST_POSTGRES_SERVER_OPTIONS`): `hello5` reports the server's transactions, WAL
//! bytes, CPU and (with the extension) statements per orchestration.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

#[test]
fn hello5_on_postgres_reports_the_servers_work_per_orchestration() {
    let url = taskhub_test_support::env::postgres_url("cargo test -p taskhub-bench");
    let run = common::run(
        &["hello5", "--backend", "postgres", "--scale", "0.02"],
        &[("TASKHUB_TEST_POSTGRES_URL", &url)],
    );
    run.assert_scenarios("postgres", &["hello5"]);
    let r = &run.records[0];
    let figure = |key: &str| r[key].as_f64().unwrap_or_else(|| panic!("{key} in {r}"));
    // Each orchestration is at least its start and its five activities' checkpoints.
    assert!(figure("pg_transactions_per_orchestration") >= 1.0, "{r}");
    assert!(figure("pg_wal_bytes_per_orchestration") > 0.0, "{r}");
    assert!(figure("pg_server_cpu_us_per_orchestration") > 0.0, "{r}");
    let loaded = std::env::var("TASKHUB_TEST_POSTGRES_SERVER_OPTIONS")
        .is_ok_and(|o| o.contains("pg_stat_statements"));
    if loaded {
        assert!(
            figure("pg_statements_per_orchestration")
                >= figure("pg_transactions_per_orchestration"),
            "{r}"
        );
    }
}
