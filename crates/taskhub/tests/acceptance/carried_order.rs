//! Events carried across continue-as-new keep their order: an orchestration that takes one
//! event per generation and carries the rest sees N events in the order they were raised,
//! some raised before it started and the rest while it keeps continuing as new. On every
//! backend (Azure under `scripts/with-azurite.sh`, PostgreSQL under
//! `scripts/with-postgres.sh`). Before the carried events were applied with the next start
//! (`worker/orchestration/carry.rs`), Azure saw them behind events raised later.

use std::time::Duration;

use crate::backends::{settings, Backend, TestStore};
use crate::common::wait_done;
use taskhub::*;

taskhub_test_support::backend_matrix!(
    [every]
    events_carried_across_continue_as_new_keep_their_order,
);

/// How many events are raised.
const N: u32 = 24;

/// Takes one event per generation and carries the unread ones into the next.
async fn one_per_generation(
    ctx: OrchestrationContext,
    seen: Vec<u32>,
) -> Result<Vec<u32>, OrchestrationError> {
    if seen.len() == N as usize {
        return Ok(seen);
    }
    let v: u32 = ctx.wait_for_event("e").await?;
    let mut seen = seen;
    seen.push(v);
    let carry = ContinueAsNewOptions {
        preserve_unprocessed_events: true,
        ..ContinueAsNewOptions::default()
    };
    ctx.continue_as_new_with(seen, carry).await
}

async fn events_carried_across_continue_as_new_keep_their_order(backend: Backend) {
    let mut reg = Registry::new();
    reg.orchestration("OnePerGeneration", one_per_generation);
    let store = TestStore::fresh(backend, "carried-order").await;
    let hub = TaskHub::open(store.store.clone(), settings(backend))
        .await
        .unwrap();
    let client = hub.client();
    let id = client
        .start("OnePerGeneration", Vec::<u32>::new())
        .await
        .unwrap();
    // Half raised before any worker runs: the first generations carry them.
    for v in 1..=N / 2 {
        client.raise_event(&id, "e", &v).await.unwrap();
    }
    let worker = Worker::start(&hub, reg).await.unwrap();
    // The rest while it keeps continuing as new.
    for v in N / 2 + 1..=N {
        client.raise_event(&id, "e", &v).await.unwrap();
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    let done = wait_done(&client, &id, Duration::from_secs(120)).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");
    let seen: Vec<u32> = done.output().unwrap().unwrap();
    assert_eq!(
        seen,
        (1..=N).collect::<Vec<_>>(),
        "the order the generations saw"
    );
    worker.shutdown().await;
}
