//! Backend-reported limits: a store reports its own message size, dequeue batch and delay
//! limits, the wrappers pass them on, and the conformance cases go by what the store reports
//! (a backend whose limits are not Azure Storage's still conforms).
#![cfg(feature = "testing")]
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::conformance::{queues, start_clock};
use taskhub_storage::faults::FaultPlan;
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::instrumented::Instrumented;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    ManualClock, NewQueueMessage, QueueName, QueueStore, StorageError, TaskHubStore,
    MAX_DEQUEUE_BATCH, MAX_MESSAGE_BYTES,
};

const SMALL_MESSAGE: usize = 1_000;
const SMALL_BATCH: usize = 5;

fn small(clock: &ManualClock) -> MemoryStore {
    MemoryStore::with_queue_limits(Arc::new(clock.clone()), SMALL_MESSAGE, SMALL_BATCH)
}

#[tokio::test]
async fn a_store_reports_and_enforces_its_own_queue_limits() {
    let clock = start_clock();
    let s = small(&clock);
    assert_eq!(s.max_message_bytes(), SMALL_MESSAGE);
    assert_eq!(s.max_dequeue_batch(), SMALL_BATCH);
    let too_big = NewQueueMessage {
        body: "x".repeat(SMALL_MESSAGE + 1),
        delay: Duration::ZERO,
    };
    let err = s
        .enqueue(QueueName::WorkItems, vec![too_big])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLarge { limit, .. } if limit == SMALL_MESSAGE),
        "{err:?}"
    );
    assert!(matches!(
        s.dequeue(
            QueueName::WorkItems,
            SMALL_BATCH + 1,
            Duration::from_secs(1)
        )
        .await,
        Err(StorageError::InvalidArgument(_))
    ));
    // The default store has Azure Storage's limits.
    let default = MemoryStore::new(Arc::new(clock));
    assert_eq!(default.max_message_bytes(), MAX_MESSAGE_BYTES);
    assert_eq!(default.max_dequeue_batch(), MAX_DEQUEUE_BATCH);
}

#[tokio::test]
async fn wrappers_pass_the_limits_of_the_store_they_wrap_on() {
    let clock = start_clock();
    let inner = Arc::new(small(&clock));
    let faulty = FaultyStore::new(inner.clone(), Arc::new(clock.clone()), FaultPlan::none());
    let instrumented = Instrumented::new(small(&clock));
    for (name, s) in [
        ("faulty", &faulty as &dyn QueueStore),
        ("instrumented", &instrumented as &dyn QueueStore),
    ] {
        assert_eq!(s.max_message_bytes(), SMALL_MESSAGE, "{name}");
        assert_eq!(s.max_dequeue_batch(), SMALL_BATCH, "{name}");
        assert_eq!(s.max_delay(), inner.max_delay(), "{name}");
        assert_eq!(s.delay_granularity(), inner.delay_granularity(), "{name}");
    }
}

/// The conformance cases about limits pass on a store whose limits are not the global
/// constants: they go by what the store reports.
#[tokio::test]
async fn the_conformance_cases_go_by_the_reported_limits() {
    let clock = start_clock();
    let store: Arc<dyn TaskHubStore> = Arc::new(small(&clock));
    queues::enqueue_rejects_body_over_max_message_bytes(&*store, &clock).await;
    let clock = start_clock();
    let store: Arc<dyn TaskHubStore> = Arc::new(small(&clock));
    queues::dequeue_rejects_max_of_zero_or_over_batch_limit(&*store, &clock).await;
}
