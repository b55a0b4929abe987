//! Worker processes sharing one task hub on PostgreSQL: three are killed with SIGKILL in turn
//! (a fresh one started after each kill) while 1,000 orchestrations run. Every instance
//! completes with the right output, its history is clean (each task scheduled and completed
//! exactly once, one start, one completion), every activity ran, and an activity ran again only
//! after a run in a killed process: checkpoints are transactions, so no torn checkpoint is ever
//! re-sent and a lease move between live workers never re-runs anything.
//!
//! The test re-executes its own binary as the worker process (`postgres_worker_process`,
//! ignored unless started by this test; the hub's name is in the file `postgres-hub` of the
//! test's dir). Run with a server up:
//! `scripts/with-postgres.sh cargo test -p taskhub --test postgres_workers`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/pg_workers.rs"]
mod pg_workers;

use std::collections::BTreeSet;
use std::time::Instant;

use common::*;
use pg_workers::{check_instances, logged_runs, settings, until_runs, FAN, SEQ};
use taskhub::*;

const INSTANCES: u64 = 1_000;

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn postgres_worker_process() {
    if let Some((dir, log)) = child::child_env() {
        backends::run_postgres_child(
            &dir,
            pg_workers::settings(),
            child::registry(log, pg_workers::SEQ, pg_workers::FAN),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_killed_in_turn_over_a_thousand_orchestrations_lose_nothing() {
    let dir = TempDir::new("postgres-workers");
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
        .map(|_| child::spawn("postgres_worker_process", &dir.0))
        .collect();
    let total = usize::try_from(INSTANCES * (SEQ + FAN)).unwrap();
    let began = Instant::now();
    let mut killed = BTreeSet::new();
    for round in 1..=3 {
        until_runs(&dir.0, total * round / 5).await;
        // The oldest worker goes (each of the first three in turn); a fresh one joins.
        let mut victim = workers.remove(0);
        killed.insert(victim.child.id());
        victim.child.kill().unwrap(); // SIGKILL
        victim.child.wait().unwrap();
        eprintln!(
            "{:?}: killed {} (pid {}) after {} runs",
            began.elapsed(),
            victim.name,
            victim.child.id(),
            logged_runs(&dir.0)
        );
        workers.push(child::spawn("postgres_worker_process", &dir.0));
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
    let mut again = 0;
    for ((instance, task), pids) in &runs {
        for earlier in &pids[..pids.len() - 1] {
            assert!(
                killed.contains(earlier),
                "{instance} task {task} ran again after a run in live process {earlier} \
                 (runs: {pids:?}; killed: {killed:?})"
            );
            again += 1;
        }
    }
    eprintln!(
        "postgres workers: {INSTANCES} instances, {total} activities, {again} re-runs of work \
         the killed processes had in flight"
    );
}
