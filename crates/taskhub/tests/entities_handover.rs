//! Entity calls and signals across partitions while partitions change hands: orchestrations on
//! some partitions call entities on others, entities relay to entities on others, and
//! meanwhile partitions are bumped (their checkpoints fenced until the lease manager notices)
//! and a second worker joins (partitions are drained and handed over to it). Every operation
//! is applied once, every call answered, nothing dead-lettered. Memory (two-step entity
//! checkpoints) and SQLite (one transaction).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{SystemClock, TaskHubStore};

const ENTITIES: u64 = 8;
const SIGNALS: u64 = 40;
const CALLERS: u64 = 8;
const CALLS: u64 = 6;

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
        let mut t: Tally = ctx.get_state_or_default()?;
        let n: u64 = ctx.input()?;
        match ctx.operation_name() {
            "add" => {
                t.count += 1;
                t.sum += n;
            }
            "relay" => {
                let key: u64 = ctx.entity_id().key()[1..].parse()?;
                ctx.signal_entity(&tally((key + 3) % ENTITIES), "add", &n)?;
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
                ctx.sleep(Duration::from_millis(5)).await;
                answers += 1;
            }
            Ok::<_, OrchestrationError>(answers)
        },
    );
    reg
}

fn settings() -> Settings {
    Settings {
        partition_count: 4,
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(300),
        lease_acquire_interval: Duration::from_millis(300),
        ..fast_settings()
    }
}

fn expected() -> (u64, u64) {
    let mut t = (0, 0);
    for e in 0..ENTITIES {
        for i in 0..SIGNALS {
            t.0 += 1;
            t.1 += 10_000 + e * 1_000 + i;
        }
    }
    for c in 1..=CALLERS {
        for i in 0..CALLS {
            t.0 += 1;
            t.1 += c * 1_000 * 100 + i;
        }
    }
    t
}

async fn totals(client: &TaskHubClient) -> (u64, u64) {
    let mut t = (0, 0);
    for k in 0..ENTITIES {
        if let Some(s) = client.read_entity_state::<Tally>(&tally(k)).await.unwrap() {
            t.0 += s.count;
            t.1 += s.sum;
        }
    }
    t
}

async fn handover(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, settings()).await.unwrap();
    let first = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let mut callers = Vec::new();
    for c in 1..=CALLERS {
        callers.push(client.start("Caller", c * 1_000).await.unwrap());
    }
    let mut second = None;
    for i in 0..SIGNALS {
        for e in 0..ENTITIES {
            let n = 10_000 + e * 1_000 + i;
            if i % 2 == 0 {
                client.signal_entity(&tally(e), "add", &n).await.unwrap();
            } else {
                let from = (e + ENTITIES - 3) % ENTITIES;
                client
                    .signal_entity(&tally(from), "relay", &n)
                    .await
                    .unwrap();
            }
        }
        // Bump a partition now and then, and let a second worker join halfway.
        if i % 8 == 4 {
            hub.admin()
                .bump(u32::try_from(i / 8 % 4).unwrap())
                .await
                .unwrap();
        }
        if i == SIGNALS / 2 {
            second = Some(Worker::start(&hub, registry()).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (want_count, want_sum) = expected();
    let last = std::sync::Mutex::new((0, 0));
    wait::until_async(
        "every operation applied",
        || async {
            let t = totals(&client).await;
            *last.lock().unwrap() = t;
            t.0 >= want_count
        },
        || async { *last.lock().unwrap() },
    )
    .await;
    for id in &callers {
        let done = client.wait_for_completion(id, wait::STUCK).await.unwrap();
        assert_eq!(
            done.output::<u64>().unwrap(),
            Some(CALLS),
            "{id}: {:?}",
            done.row.failure
        );
    }
    assert_eq!(
        totals(&client).await,
        (want_count, want_sum),
        "an operation was applied twice or lost"
    );
    let second = second.unwrap();
    assert_eq!(
        first.stats().dead_lettered + second.stats().dead_lettered,
        0
    );
    assert!(
        second.stats().entity_batches > 0,
        "the joining worker took over partitions and ran entity batches"
    );
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_calls_and_signals_survive_handovers_in_memory() {
    handover(Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_calls_and_signals_survive_handovers_on_sqlite() {
    let dir = TempDir::new("entities-handover");
    handover(sqlite_store(&dir.0)).await;
}
