//! Entity calls and signals across partitions while partitions change hands: orchestrations on
//! some partitions call entities on others, entities relay to entities on others, and
//! meanwhile partitions are bumped (their checkpoints fenced until the lease manager notices)
//! and a second worker joins (partitions are drained and handed over to it). Every operation
//! is applied once, every call answered, nothing dead-lettered. Memory (two-step entity
//! checkpoints) and SQLite (one transaction).

use std::sync::Arc;
use std::time::Duration;

use crate::common::tallies::every_operation_applied_once;
use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_storage::TaskHubStore;
use taskhub_test_support::tally::Tallies;

/// Callers sleep between calls so that their turns straddle the handovers.
const TALLIES: Tallies = Tallies {
    entities: 8,
    signals: 40,
    callers: 8,
    calls: 6,
    relay_step: 3,
    signal_base: 10_000,
    op_delay: Duration::ZERO,
    call_pause: Duration::from_millis(5),
};

fn settings() -> Settings {
    Settings {
        partition_count: 4,
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(300),
        lease_acquire_interval: Duration::from_millis(300),
        ..fast_settings()
    }
}

async fn handover(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, settings()).await.unwrap();
    let first = Worker::start(&hub, TALLIES.registry()).await.unwrap();
    let client = hub.client();
    let callers = TALLIES.start_callers(&client).await;
    let mut second = None;
    for i in 0..TALLIES.signals {
        TALLIES.signal_round(&client, i).await;
        // Bump a partition now and then, and let a second worker join halfway.
        if i % 8 == 4 {
            hub.admin()
                .bump(u32::try_from(i / 8 % 4).unwrap())
                .await
                .unwrap();
        }
        if i == TALLIES.signals / 2 {
            second = Some(Worker::start(&hub, TALLIES.registry()).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    every_operation_applied_once(TALLIES, &client, &callers).await;
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

memory_and_sqlite!(
    handover, "entities-handover":
    entity_calls_and_signals_survive_handovers_in_memory,
    entity_calls_and_signals_survive_handovers_on_sqlite,
);
