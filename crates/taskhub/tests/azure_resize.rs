//! A live partition-count change on an Azure hub (Azurite): two worker processes run
//! instances while the count is raised from 4 to 8 and then lowered to 2. New instances use the
//! new layout; the removed partitions forward their messages and re-home their instances, then
//! retire; every instance completes with the right output, none is left on a removed partition,
//! and only re-homed instances re-run an activity, at most once (nobody is killed).
//!
//! It found two bugs, both fixed: the history sentinel fenced a re-homed instance's writer
//! because it compared lease epochs of different partitions (`taskhub-azure`
//! `rehomed_sentinel.rs`), and the fenced worker then stopped processing its live partition
//! while its lease manager kept renewing it (`leases/fenced_kept.rs`). On timeout it prints the
//! instance, its history, the queue lengths and the leases.
//!
//! The test re-executes its own binary as the worker process (`azure_resize_worker`, ignored
//! unless started by this test). Run with Azurite up:
//! `scripts/with-azurite.sh cargo test -p taskhub --test azure_resize`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::*;
use taskhub::*;
use taskhub_storage::QueueName;

const SEQ: u64 = 2;
const FAN: u64 = 2;
const PER_PHASE: u64 = 40;
/// How long any one wait of this test may take.
const BOUND: Duration = Duration::from_secs(120);

fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        work_item_visibility_timeout: Duration::from_secs(15),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        partition_retire_grace: Duration::from_secs(1),
        ..backends::settings(backends::Backend::Azure)
    }
}

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn azure_resize_worker() {
    if let Some((dir, log)) = child::child_env() {
        backends::run_azure_child(&dir, settings(), child::registry(log, SEQ, FAN));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_count_raised_and_lowered_on_azure() {
    let dir = TempDir::new("azure-resize");
    let hub_name = backends::unique_hub_name();
    std::fs::write(dir.0.join(backends::AZURE_HUB_FILE), &hub_name).unwrap();
    let hub = TaskHub::open(backends::azure_store(&hub_name).await, settings())
        .await
        .unwrap();
    let client = hub.client();
    let admin = hub.admin();
    let mut workers = vec![
        child::spawn("azure_resize_worker", &dir.0),
        child::spawn("azure_resize_worker", &dir.0),
    ];
    let start = |from: u64, to: u64| child::start_chains(&client, from, to);
    let mut ids = start(0, PER_PHASE).await;
    admin.set_partition_count(8).await.unwrap();
    ids.extend(start(PER_PHASE, 2 * PER_PHASE).await);
    let rows = child::instance_rows(&hub).await;
    let spread: BTreeSet<u32> = rows.iter().map(|r| r.partition).collect();
    assert!(
        spread.iter().any(|p| *p >= 4),
        "new instances use the new partitions: {spread:?}"
    );
    // Where each instance lived before the count was lowered (all started so far).
    let home: std::collections::HashMap<String, u32> = rows
        .iter()
        .map(|r| (r.instance_id.to_string(), r.partition))
        .collect();
    // Lower the count while instances on the partitions about to go are still running.
    admin.set_partition_count(2).await.unwrap();
    ids.extend(start(2 * PER_PHASE, 3 * PER_PHASE).await);
    for (id, base) in &ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => {
                let status = client.get_status(id, StatusOptions { history: true }).await;
                let mut queues = Vec::new();
                for p in 0..8 {
                    let q = QueueName::Control(p);
                    queues.push((p, hub.store().stats(q).await.map(|s| s.length)));
                }
                let parts = hub.store().list_partitions().await;
                panic!(
                    "{e}: partition at 4 {}, at 8 {}, at 2 {}; status {status:#?}; control \
                     queue lengths {queues:?}; partitions {parts:#?}",
                    id.partition(4),
                    id.partition(8),
                    id.partition(2)
                )
            }
        };
        common::run::assert_completed_with(&s, child::expected(*base, SEQ, FAN));
    }

    // The removed partitions retire once empty, and every instance lives on a live one.
    let began = Instant::now();
    loop {
        let rows = hub.store().list_partitions().await.unwrap();
        if rows
            .iter()
            .filter(|r| r.partition >= 2)
            .all(|r| r.retiring && r.offline && r.owner.is_none())
        {
            break;
        }
        assert!(began.elapsed() < BOUND, "partitions not retired: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for p in 2..8 {
        let stats = hub.store().stats(QueueName::Control(p)).await.unwrap();
        assert_eq!(stats.length, 0, "control-{p:02} is empty");
    }
    let rows = child::instance_rows(&hub).await;
    assert_eq!(rows.len() as u64, 3 * PER_PHASE);
    let stranded: Vec<_> = rows
        .iter()
        .filter(|r| r.partition >= 2)
        .map(|r| (r.instance_id.to_string(), r.partition))
        .collect();
    assert!(stranded.is_empty(), "instances not re-homed: {stranded:?}");
    let runs = child::activity_runs(&dir.0);
    assert_eq!(
        runs.len() as u64,
        3 * PER_PHASE * (SEQ + FAN),
        "every activity ran"
    );
    // Nobody was killed. On SQLite no activity runs twice here (multi_worker.rs). On Azure an
    // instance re-homed from a removed partition can be loaded by its new partition's worker
    // while a turn it began on the removed partition is between the commit of its checkpoint
    // and the clearing of its pending outbox: the loader re-sends the outbox, and an activity
    // it scheduled runs twice (docs/INVARIANTS.md, "When an activity may run twice", case 5).
    // So: only instances that lived on a removed partition re-run, each activity at most twice.
    let twice: Vec<_> = runs.iter().filter(|(_, pids)| pids.len() > 1).collect();
    for ((instance, task), pids) in &twice {
        let partition = home.get(instance.as_str()).copied().unwrap_or(0);
        assert!(
            partition >= 2 && pids.len() == 2,
            "{instance} task {task} ran {} times; it was on partition {partition} before the \
             count was lowered (runs: {pids:?})",
            pids.len()
        );
    }
    eprintln!(
        "azure resize: {} instances, {} activities, {} re-run after re-homing",
        rows.len(),
        runs.len(),
        twice.len()
    );
    for w in &mut workers {
        drop(w.child.stdin.take());
        assert!(
            w.child.wait().unwrap().success(),
            "graceful shutdown of {}",
            w.name
        );
    }
}
