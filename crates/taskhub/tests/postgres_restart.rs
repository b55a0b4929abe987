//! The PostgreSQL server restarted mid-run: three worker processes run 300 orchestrations on
//! one hub; the server is restarted twice (a fast shutdown, then an immediate one: a crash and
//! recovery) while they work. The workers reconnect and carry on: every instance completes with
//! the right output and a clean history, every activity ran, nothing is dead-lettered.
//!
//! The server is the test cluster of `scripts/with-postgres.sh` (its data dir, binaries and
//! OS user in `TASKHUB_TEST_POSTGRES_DATA`, `_BIN`, `_RUN_AS`); this is the only test of its
//! binary, so no other test sees the restarts. Run with
//! `scripts/with-postgres.sh cargo test -p taskhub --test postgres_restart`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/worker_procs.rs"]
mod pg_workers;

use std::process::Command;
use std::time::Instant;

use common::*;
use pg_workers::{check_instances, logged_runs, settings, until_runs, FAN, SEQ};
use taskhub::*;

const INSTANCES: u64 = 300;

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn postgres_restart_worker_process() {
    if let Some((dir, log)) = child::child_env() {
        backends::run_postgres_child(&dir, settings(), child::registry(log, SEQ, FAN));
    }
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set. This test restarts the test server: run it as \
             `scripts/with-postgres.sh cargo test -p taskhub --test postgres_restart` \
             (scripts/test.sh does this)."
        )
    })
}

/// Restarts the test server with `pg_ctl restart -m <mode>` and waits until it is up.
fn restart(mode: &str) {
    let data = var("TASKHUB_TEST_POSTGRES_DATA");
    let pg_ctl = format!("{}/pg_ctl", var("TASKHUB_TEST_POSTGRES_BIN"));
    let run_as = var("TASKHUB_TEST_POSTGRES_RUN_AS");
    let mut cmd = if run_as.is_empty() {
        Command::new(&pg_ctl)
    } else {
        let mut c = Command::new("runuser");
        c.args(["-u", &run_as, "--", &pg_ctl]);
        c
    };
    let status = cmd
        .args(["-D", &data, "-m", mode, "-w", "-t", "60", "restart"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pg_ctl restart -m {mode}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_reconnect_after_server_restarts_and_lose_nothing() {
    let dir = TempDir::new("postgres-restart");
    let hub_name = backends::unique_hub_name();
    std::fs::write(dir.0.join(backends::POSTGRES_HUB_FILE), &hub_name).unwrap();
    let hub = TaskHub::open(backends::postgres_store(&hub_name).await, settings())
        .await
        .unwrap();
    let client = hub.client();
    let mut ids = Vec::new();
    for i in 0..INSTANCES {
        ids.push((client.start("Chain", i * 1000).await.unwrap(), i * 1000));
    }
    let mut workers: Vec<child::Proc> = (0..3)
        .map(|_| child::spawn("postgres_restart_worker_process", &dir.0))
        .collect();
    let total = usize::try_from(INSTANCES * (SEQ + FAN)).unwrap();
    let began = Instant::now();
    for (round, mode) in [(1, "fast"), (2, "immediate")] {
        until_runs(&dir.0, total * round / 4).await;
        let at = logged_runs(&dir.0);
        tokio::task::spawn_blocking(move || restart(mode))
            .await
            .unwrap();
        eprintln!(
            "{:?}: server restarted (-m {mode}) after {at} runs",
            began.elapsed()
        );
    }
    check_instances(&hub, &ids).await;
    eprintln!("{:?}: all {INSTANCES} instances completed", began.elapsed());
    for w in &mut workers {
        drop(w.child.stdin.take());
        assert!(
            w.child.wait().unwrap().success(),
            "graceful shutdown of {}",
            w.name
        );
    }
    let runs = child::activity_runs(&dir.0);
    assert_eq!(runs.len(), total, "every activity ran");
    let again: usize = runs.values().map(|pids| pids.len() - 1).sum();
    eprintln!("postgres restart: {INSTANCES} instances, {total} activities, {again} re-runs");
}
