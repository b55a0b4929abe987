//! The body of the entity fault test (`entities_faults.rs` on memory, `entities_azure.rs` on
//! Azurite), through `FaultyStore`. Included as `#[path = "common/entities_faults_suite.rs"]`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_storage::faults::FaultPlan;
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{SystemClock, TaskHubStore};

use crate::common::*;

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

pub async fn run(backend: Arc<dyn TaskHubStore>, plan: FaultPlan, label: &str) {
    let store = Arc::new(FaultyStore::new(
        backend,
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
    let injected = store.faults().injected();
    store.faults().set_plan(FaultPlan::none());
    assert!(
        injected
            .iter()
            .any(|i| matches!(i.fault, taskhub_storage::faults::InjectedFault::Torn(_))),
        "{label}: no checkpoint was torn: {injected:?}"
    );
    assert_eq!(
        totals(&client).await,
        (want_count, want_sum),
        "{label}: an operation was applied twice or lost"
    );
    assert_eq!(worker.stats().dead_lettered, 0, "{label}");
    worker.shutdown().await;
}
