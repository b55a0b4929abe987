//! A worker process killed with SIGKILL mid-run and restarted, again and again: every instance
//! completes with the right output, no event is applied to a history twice, and activities
//! re-run only when they were running in a killed process.
//!
//! The test re-executes its own binary as the worker process (the `child_worker` entry point,
//! ignored unless started by this test).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::collections::HashMap;

use common::history::history_of;
use common::run::assert_completed_with;
use common::*;
use taskhub::*;

const SEQ: u64 = 6;
const FAN: u64 = 4;

/// Messages of a killed worker reappear after the visibility timeout, and its partitions are
/// taken over after the lease interval: keep both short here.
///
/// A process lives about as long as the visibility timeout here (it is killed after a few
/// hundred activity runs), so what one kill left in flight reappears late in the next
/// process's life and can be in flight at the next kill too. Each such delivery ended in a
/// crash, which is what the poison rule counts: at the default `max_dequeue_count` (5) a
/// healthy work item in flight at six kills in a row is dead-lettered, as a message that
/// crashed six workers should be. This test is about losing nothing across kills, so it
/// allows more deliveries; `delivery/dead_letter.rs` tests the poison rule.
fn kill_settings() -> Settings {
    Settings {
        max_dequeue_count: 50,
        ..child::failover_settings()
    }
}

fn expected(base: u64) -> u64 {
    child::expected(base, SEQ, FAN)
}

#[test]
#[ignore = "entry point of the worker process started by kill9_workers_lose_nothing"]
fn child_worker() {
    if let Some((db, log)) = child::child_env() {
        child::run_child(&db, kill_settings(), child::registry(log, SEQ, FAN));
    }
}

fn spawn_worker(dir: &std::path::Path) -> std::process::Child {
    child::spawn("child_worker", dir).child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_workers_lose_nothing() {
    let (dir, hub) = sqlite_hub("kill9", kill_settings()).await;
    let client = hub.client();
    let n = 300u64;
    let ids = child::start_chains(&client, 0, n).await;
    let mut kills = 0;
    let mut child = spawn_worker(&dir.0);
    // Six kills spread over the run by the work done (after 1/8, 2/8, ... 6/8 of the activity
    // runs), each after the current process has run something itself.
    let total = usize::try_from(n * (SEQ + FAN)).unwrap();
    let mut at_spawn = 0;
    for round in 1..=6 {
        let Some(reached) = child::wait_for_runs(&dir.0, total * round / 8, at_spawn, total).await
        else {
            eprintln!("all {total} activities ran before kill {round}");
            break;
        };
        eprintln!("kill {round} after {reached} of {total} activity runs");
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        at_spawn = child::logged_runs(&dir.0);
        child = spawn_worker(&dir.0);
    }
    for (id, base) in &ids {
        let s = match client.wait_for_completion(id, wait::STUCK).await {
            Ok(s) => s,
            Err(e) => panic!("{id} did not finish ({e}): {}", stuck_state(&hub, id).await),
        };
        assert_completed_with(&s, expected(*base));
        let history = history_of(&client, id).await;
        let mut scheduled = HashMap::new();
        let mut completed = HashMap::new();
        for e in &history {
            match &e.event {
                EventKind::TaskScheduled { task_id, .. } => {
                    *scheduled.entry(*task_id).or_insert(0) += 1
                }
                EventKind::TaskCompleted { task_id, .. } => {
                    *completed.entry(*task_id).or_insert(0) += 1
                }
                _ => {}
            }
        }
        assert_eq!(scheduled.len(), 10, "{id}");
        assert!(
            scheduled
                .values()
                .chain(completed.values())
                .all(|c| *c == 1),
            "{id}: an event was applied twice"
        );
        assert_eq!(
            history
                .iter()
                .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
                .count(),
            1
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = child::activity_runs(&dir.0);
    assert_eq!(runs.len() as u64, n * (SEQ + FAN), "every activity ran");
    let reruns = runs.values().map(|pids| pids.len() as u32 - 1).sum::<u32>();
    // Only activities running in a killed process may run again: at most the worker's
    // concurrency limit per kill.
    let bound = kills * hub.settings().max_concurrent_activities as u32;
    assert!(
        reruns <= bound,
        "{reruns} re-runs for {kills} kills (bound {bound})"
    );
    eprintln!("kill9: {n} instances, {kills} kills, {reruns} activity re-runs");
}

/// What a stuck instance is waiting for: its row, the tail of its history, the queues and the
/// dead letters.
async fn stuck_state(hub: &TaskHub, id: &InstanceId) -> String {
    let store = hub.store();
    let row = store.get_instance(id).await.ok().flatten();
    let history = store.load_history(id).await.ok().flatten();
    let tail: Vec<String> = history
        .as_ref()
        .map(|h| {
            h.events
                .iter()
                .rev()
                .take(8)
                .map(|e| format!("{:?}", e.event).chars().take(120).collect())
                .collect()
        })
        .unwrap_or_default();
    let mut queues = Vec::new();
    for p in 0..hub.partition_count() {
        let st = store.stats(taskhub_storage::QueueName::Control(p)).await;
        queues.push(format!("control-{p}: {:?}", st.map(|s| s.length)));
    }
    let work = store.stats(taskhub_storage::QueueName::WorkItems).await;
    queues.push(format!("workitems: {:?}", work.map(|s| s.length)));
    let letters: Vec<String> = store
        .list_dead_letters(None, 20)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|l| {
            format!(
                "{} ({}): {}",
                l.reason,
                l.queue,
                l.body.chars().take(200).collect::<String>()
            )
        })
        .collect();
    format!(
        "row {:?}; history newest first {tail:?}; queues {queues:?}; dead letters {letters:?}",
        row.map(|r| r.status)
    )
}
