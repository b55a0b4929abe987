//! The body of the entity fault test (`entity_scenarios/faults.rs` on memory, `entities.rs`'s
//! `torn::azure::…` on Azurite), through `FaultyStore`. Included as
//! `#[path = "common/entities_faults_suite.rs"]`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::faults::FaultPlan;
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{SystemClock, TaskHubStore};
use taskhub_test_support::tally::Tallies;

use crate::common::*;

/// Each number is relayed by the previous tally.
const TALLIES: Tallies = Tallies {
    entities: 4,
    signals: 30,
    callers: 3,
    calls: 4,
    relay_step: 1,
    signal_base: 10_000,
    op_delay: Duration::ZERO,
    call_pause: Duration::ZERO,
};

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

pub async fn run(backend: Arc<dyn TaskHubStore>, plan: FaultPlan, label: &str) {
    let store = Arc::new(FaultyStore::new(
        backend,
        Arc::new(SystemClock::new()),
        FaultPlan::none(),
    ));
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let client = hub.client();
    // Half of each entity's numbers are signalled directly, half relayed by the previous one.
    TALLIES.signal_all(&client).await;
    let callers = TALLIES.start_callers(&client).await;
    store.faults().set_plan(plan);
    let worker = Worker::start(&hub, TALLIES.registry()).await.unwrap();
    let (want_count, want_sum) = TALLIES.expected();
    let last = std::sync::Mutex::new((0, 0));
    wait::until_async(
        &format!("{label}: every operation applied"),
        || async {
            let t = TALLIES.totals(&client).await;
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
        assert_eq!(
            done.output::<u64>().unwrap(),
            Some(TALLIES.calls),
            "{label}: {id}"
        );
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
        TALLIES.totals(&client).await,
        (want_count, want_sum),
        "{label}: an operation was applied twice or lost"
    );
    assert_eq!(worker.stats().dead_lettered, 0, "{label}");
    worker.shutdown().await;
}
