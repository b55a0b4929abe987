//! Entities keep exactly-once state updates when checkpoints are torn after each step of the
//! ordered checkpoint (the memory backend has no transactions, so an entity batch that sends
//! messages commits in two steps, see `worker/entity`) and under seeded random storage faults:
//! every operation — signalled by the client, relayed by another entity, or called by an
//! orchestration — changes the state once, and every call gets its answer.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, TearAfter};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{StorageError, SystemClock, TaskHubStore};

const ENTITIES: u64 = 4;
const SIGNALS: u64 = 30;
const CALLERS: u64 = 3;
const CALLS: u64 = 4;

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
            // Passes the number on to the next tally.
            "relay" => {
                let key: u64 = ctx.entity_id().key()[1..].parse()?;
                ctx.signal_entity(&tally((key + 1) % ENTITIES), "add", &n)?;
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

fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_millis(800),
        work_item_visibility_timeout: Duration::from_millis(800),
        lease_interval: Duration::from_secs(3),
        lease_renew_interval: Duration::from_secs(1),
        lease_acquire_interval: Duration::from_secs(1),
        max_dequeue_count: 50,
        ..fast_settings()
    }
}

/// The numbers the run sends: (count, sum) over all tallies.
fn expected() -> (u64, u64) {
    let mut count = 0;
    let mut sum = 0;
    for e in 0..ENTITIES {
        for i in 0..SIGNALS {
            count += 1;
            sum += 10_000 + e * 1_000 + i;
        }
    }
    for c in 0..CALLERS {
        for i in 0..CALLS {
            count += 1;
            sum += (c + 1) * 1_000 * 100 + i;
        }
    }
    (count, sum)
}

async fn totals(client: &TaskHubClient) -> (u64, u64) {
    let mut count = 0;
    let mut sum = 0;
    for k in 0..ENTITIES {
        if let Ok(Some(t)) = client.read_entity_state::<Tally>(&tally(k)).await {
            count += t.count;
            sum += t.sum;
        }
    }
    (count, sum)
}

async fn run(plan: FaultPlan, label: &str) {
    let store = Arc::new(FaultyStore::new(
        Arc::new(MemoryStore::new(Arc::new(SystemClock::new()))) as Arc<dyn TaskHubStore>,
        Arc::new(SystemClock::new()),
        FaultPlan::none(),
    ));
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let client = hub.client();
    // Half of each entity's numbers are signalled directly, half relayed by the previous one.
    for e in 0..ENTITIES {
        for i in 0..SIGNALS {
            let n = 10_000 + e * 1_000 + i;
            if i % 2 == 0 {
                client.signal_entity(&tally(e), "add", &n).await.unwrap();
            } else {
                let from = (e + ENTITIES - 1) % ENTITIES;
                client
                    .signal_entity(&tally(from), "relay", &n)
                    .await
                    .unwrap();
            }
        }
    }
    let mut callers = Vec::new();
    for c in 0..CALLERS {
        callers.push(client.start("Caller", (c + 1) * 1_000).await.unwrap());
    }
    store.faults().set_plan(plan);
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let (want_count, want_sum) = expected();
    let last = std::sync::Mutex::new((0, 0));
    wait::until_async(
        &format!("{label}: every operation applied"),
        || async {
            let t = totals(&client).await;
            *last.lock().unwrap() = t;
            t.0 >= want_count
        },
        || async { (*last.lock().unwrap(), store.faults().injected()) },
    )
    .await;
    for id in &callers {
        let done = loop {
            match client.wait_for_completion(id, wait::STUCK).await {
                Ok(d) => break d,
                Err(e) if e.is_retryable() => continue,
                Err(e) => panic!("{label}: {id}: {e}"),
            }
        };
        assert_eq!(done.output::<u64>().unwrap(), Some(CALLS), "{label}: {id}");
    }
    store.faults().set_plan(FaultPlan::none());
    assert_eq!(
        totals(&client).await,
        (want_count, want_sum),
        "{label}: an operation was applied twice or lost"
    );
    assert_eq!(worker.stats().dead_lettered, 0, "{label}");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_checkpoints_torn_after_each_step_apply_each_operation_once() {
    for step in TearAfter::ALL {
        let plan = (0..15u64).fold(FaultPlan::none(), |plan, k| {
            plan.tear_checkpoint(1 + 3 * k, step)
        });
        run(plan, &format!("torn after step {}", step.step())).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_under_seeded_faults_apply_each_operation_once() {
    for seed in 1..=3 {
        let plan = FaultPlan::none()
            .random(seed, 0.03, StorageError::Unavailable("injected".into()))
            .random_tears(0.15);
        run(plan, &format!("seed {seed}")).await;
    }
}
