//! Entities across worker processes on one SQLite hub: two workers share four partitions while
//! clients signal entities, entities relay to entities on other partitions, and orchestrations
//! call entities on other partitions. Worker processes are killed with SIGKILL mid-batch (kill
//! points set by the operations applied, each batch taking a while) and restarted, and a third
//! joins mid-run (partitions are handed over to it). Every operation changes its entity's
//! state exactly once, and every call is answered.
//!
//! The test re-executes its own binary as the worker processes (`child_entity_worker`).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::time::Duration;

use common::tallies::every_operation_applied_once;
use common::*;
use taskhub::*;
use taskhub_test_support::tally::Tallies;

/// Each operation takes a moment, so a batch is under way when a kill lands; numbers are
/// relayed by the tally five before (another partition, mostly).
const TALLIES: Tallies = Tallies {
    entities: 12,
    signals: 100,
    callers: 12,
    calls: 10,
    relay_step: 5,
    signal_base: 100_000,
    op_delay: Duration::from_millis(2),
    call_pause: Duration::ZERO,
};

fn kill_settings() -> Settings {
    Settings {
        partition_count: 4,
        ..child::failover_settings()
    }
}

#[test]
#[ignore = "entry point of the worker processes started by entity_workers_killed_apply_every_operation_once"]
fn child_entity_worker() {
    if let Some((db, _log)) = child::child_env() {
        child::run_child(&db, kill_settings(), TALLIES.registry());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_workers_killed_apply_every_operation_once() {
    let (dir, hub) = sqlite_hub("entities-kill9", kill_settings()).await;
    let client = hub.client();
    TALLIES.signal_all(&client).await;
    let callers = TALLIES.start_callers(&client).await;
    let (want_count, _) = TALLIES.expected();
    let mut workers = vec![
        child::spawn("child_entity_worker", &dir.0).child,
        child::spawn("child_entity_worker", &dir.0).child,
    ];
    // Four kills spread over the run by the operations applied; a third worker joins after
    // the second kill.
    for round in 1..=4u64 {
        let reached = TALLIES
            .wait_for_applied(&client, want_count * round / 6)
            .await;
        if reached >= want_count {
            eprintln!("every operation applied before kill {round}");
            break;
        }
        let victim = usize::try_from(round % 2).unwrap();
        eprintln!("kill {round} after {reached} of {want_count} operations");
        workers[victim].kill().unwrap(); // SIGKILL
        workers[victim].wait().unwrap();
        workers[victim] = child::spawn("child_entity_worker", &dir.0).child;
        if round == 2 {
            workers.push(child::spawn("child_entity_worker", &dir.0).child);
        }
    }
    every_operation_applied_once(TALLIES, &client, &callers).await;
    for mut w in workers {
        w.kill().unwrap();
        w.wait().unwrap();
    }
}
