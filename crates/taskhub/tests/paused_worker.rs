//! A worker process stopped (SIGSTOP) past its lease and then resumed (SIGCONT) must not take
//! partitions from a live worker that kept renewing (DESIGN invariant 7: only time spent
//! observing counts). Two worker processes share one SQLite file with short leases; the test
//! watches the partitions table and fails on any move of a live worker's row to the resumed
//! worker that was not a graceful handover (the owner marks the row draining first). Getting
//! its fair share back by a next-owner handover is fine, and is what the test waits for.
//!
//! The test re-executes its own binary as the worker process (`paused_worker_process`, ignored
//! unless started by this test).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use taskhub::*;

fn settings() -> Settings {
    Settings {
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        ..fast_settings()
    }
}

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn paused_worker_process() {
    if let Some((db, log)) = child::child_env() {
        child::run_child(&db, settings(), child::registry(log, 1, 0));
    }
}

fn signal(proc: &child::Proc, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &proc.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} failed");
}

/// (owner, epoch, draining) of every row.
type Rows = BTreeMap<u32, (Option<String>, u64, bool)>;

async fn rows(hub: &TaskHub) -> Rows {
    hub.store()
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.partition, (r.owner, r.epoch, r.draining)))
        .collect()
}

fn held(rows: &Rows, name: &str) -> usize {
    rows.values()
        .filter(|(o, _, _)| o.as_deref() == Some(name))
        .count()
}

async fn wait_until(hub: &TaskHub, what: &str, limit: Duration, done: impl Fn(&Rows) -> bool) {
    let start = Instant::now();
    loop {
        let now = rows(hub).await;
        if done(&now) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{what}: not after {limit:?}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_worker_does_not_steal_from_a_live_one() {
    let (dir, hub) = sqlite_hub("paused-worker", settings()).await;
    let partitions = hub.partition_count() as usize;
    let live = child::spawn("paused_worker_process", &dir.0);
    wait_until(
        &hub,
        "the first worker holds every partition",
        Duration::from_secs(30),
        |r| held(r, &live.name) == partitions,
    )
    .await;
    let paused = child::spawn("paused_worker_process", &dir.0);
    let half = partitions / 2;
    wait_until(
        &hub,
        "the two workers share the partitions",
        Duration::from_secs(30),
        |r| held(r, &paused.name) == half && held(r, &live.name) == partitions - half,
    )
    .await;

    // Watch every row change: a row of the live worker that moves to the resumed one must
    // have been marked draining by its owner first (a graceful handover).
    let steals = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (hub, steals, stop) = (hub.clone(), steals.clone(), stop.clone());
        let (live, paused) = (live.name.clone(), paused.name.clone());
        tokio::spawn(async move {
            let mut last = rows(&hub).await;
            while !stop.load(Ordering::SeqCst) {
                let now = rows(&hub).await;
                for (p, (owner, epoch, _)) in &now {
                    let Some((was, was_epoch, was_draining)) = last.get(p) else {
                        continue;
                    };
                    if was.as_deref() == Some(live.as_str())
                        && !was_draining
                        && owner.as_deref() == Some(paused.as_str())
                        && epoch > was_epoch
                    {
                        steals.lock().unwrap().push(format!(
                            "partition {p}: {live} (epoch {was_epoch}, renewing) -> {paused} (epoch {epoch})"
                        ));
                    }
                }
                last = now;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };

    signal(&paused, "-STOP");
    // Past the lease: the live worker has taken the stopped one's partitions over.
    wait_until(
        &hub,
        "the live worker takes over the stopped one's partitions",
        Duration::from_secs(30),
        |r| held(r, &live.name) == partitions,
    )
    .await;
    // And a little more than a lease interval longer, so the stopped worker's own clock
    // would call every row it last saw expired.
    let settle = Instant::now();
    while settle.elapsed() < settings().lease_interval + settings().lease_acquire_interval {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal(&paused, "-CONT");
    // The resumed worker gets its fair share back, by handover.
    wait_until(
        &hub,
        "the resumed worker gets its share back",
        Duration::from_secs(60),
        |r| held(r, &paused.name) == half && held(r, &live.name) == partitions - half,
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    watcher.await.unwrap();

    for mut w in [live, paused] {
        drop(w.child.stdin.take());
        w.child.wait().unwrap();
    }
    let steals = steals.lock().unwrap();
    assert!(
        steals.is_empty(),
        "the resumed worker took partitions from the live one: {steals:?}"
    );
}
