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

use common::*;
use serde::{Deserialize, Serialize};
use taskhub::*;

const ENTITIES: u64 = 12;
const SIGNALS: u64 = 100;
const CALLERS: u64 = 12;
const CALLS: u64 = 10;

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Tally {
    count: u64,
    sum: u64,
}

fn tally(k: u64) -> EntityId {
    EntityId::new("Tally", format!("t{k}")).unwrap()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Tally", |ctx: &mut EntityContext| {
        // Each operation takes a moment, so a batch is under way when a kill lands.
        std::thread::sleep(Duration::from_millis(2));
        let mut t: Tally = ctx.get_state_or_default()?;
        let n: u64 = ctx.input()?;
        match ctx.operation_name() {
            "add" => {
                t.count += 1;
                t.sum += n;
            }
            "relay" => {
                let key: u64 = ctx.entity_id().key()[1..].parse()?;
                ctx.signal_entity(&tally((key + 5) % ENTITIES), "add", &n)?;
            }
            other => return Err(EntityError::new(format!("no operation {other}"))),
        }
        ctx.set_state(&t)?;
        Ok(t.count)
    });
    reg.orchestration(
        "Caller",
        |ctx: OrchestrationContext, base: u64| async move {
            let mut answers = 0;
            for i in 0..CALLS {
                let _: u64 = ctx
                    .call_entity(&tally((base + i) % ENTITIES), "add", &(base * 100 + i))
                    .await?;
                answers += 1;
            }
            Ok::<_, OrchestrationError>(answers)
        },
    );
    reg
}

fn kill_settings() -> Settings {
    Settings {
        partition_count: 4,
        control_queue_visibility_timeout: Duration::from_secs(3),
        work_item_visibility_timeout: Duration::from_secs(3),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        ..fast_settings()
    }
}

#[test]
#[ignore = "entry point of the worker processes started by entity_workers_killed_apply_every_operation_once"]
fn child_entity_worker() {
    if let Some((db, _log)) = child::child_env() {
        child::run_child(&db, kill_settings(), registry());
    }
}

fn expected() -> (u64, u64) {
    let mut count = 0;
    let mut sum = 0;
    for e in 0..ENTITIES {
        for i in 0..SIGNALS {
            count += 1;
            sum += 100_000 + e * 1_000 + i;
        }
    }
    for c in 1..=CALLERS {
        for i in 0..CALLS {
            count += 1;
            sum += c * 1_000 * 100 + i;
        }
    }
    (count, sum)
}

async fn totals(client: &TaskHubClient) -> (u64, u64) {
    let mut t = (0, 0);
    for k in 0..ENTITIES {
        if let Ok(Some(s)) = client.read_entity_state::<Tally>(&tally(k)).await {
            t.0 += s.count;
            t.1 += s.sum;
        }
    }
    t
}

/// Waits until at least `n` operations are applied (or all of them).
async fn wait_for_ops(client: &TaskHubClient, n: u64) -> u64 {
    let last = std::sync::Mutex::new(0);
    wait::until_async(
        &format!("{n} operations applied"),
        || async {
            let c = totals(client).await.0;
            *last.lock().unwrap() = c;
            c >= n
        },
        || async { *last.lock().unwrap() },
    )
    .await;
    let reached = *last.lock().unwrap();
    reached
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_workers_killed_apply_every_operation_once() {
    let dir = TempDir::new("entities-kill9");
    let hub = TaskHub::open(sqlite_store(&dir.0), kill_settings())
        .await
        .unwrap();
    let client = hub.client();
    for i in 0..SIGNALS {
        for e in 0..ENTITIES {
            let n = 100_000 + e * 1_000 + i;
            if i % 2 == 0 {
                client.signal_entity(&tally(e), "add", &n).await.unwrap();
            } else {
                // Relayed by the entity five before it (another partition, mostly).
                let from = (e + ENTITIES - 5) % ENTITIES;
                client
                    .signal_entity(&tally(from), "relay", &n)
                    .await
                    .unwrap();
            }
        }
    }
    let mut callers = Vec::new();
    for c in 1..=CALLERS {
        callers.push(client.start("Caller", c * 1_000).await.unwrap());
    }
    let (want_count, want_sum) = expected();
    let mut workers = vec![
        child::spawn("child_entity_worker", &dir.0).child,
        child::spawn("child_entity_worker", &dir.0).child,
    ];
    // Four kills spread over the run by the operations applied; a third worker joins after
    // the second kill.
    for round in 1..=4u64 {
        let reached = wait_for_ops(&client, want_count * round / 6).await;
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
    wait_for_ops(&client, want_count).await;
    for id in &callers {
        let done = client.wait_for_completion(id, wait::STUCK).await.unwrap();
        assert_eq!(
            done.output::<u64>().unwrap(),
            Some(CALLS),
            "{id}: {:?}",
            done.row.failure
        );
    }
    // Every call answered means every call applied; every signal too: now compare exactly.
    assert_eq!(
        totals(&client).await,
        (want_count, want_sum),
        "an operation was applied twice or lost"
    );
    for mut w in workers {
        w.kill().unwrap();
        w.wait().unwrap();
    }
}
