//! The runtime goes by the message size the store reports: on a backend whose queues take
//! smaller messages than the `large_payload_threshold` setting, a larger message body goes to
//! the payload store instead of failing the enqueue.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{QueueStore as _, SystemClock};

/// Much smaller than the default `large_payload_threshold` (45,000 bytes).
const SMALL_QUEUE_MESSAGES: usize = 2_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_the_stores_reported_limit_go_to_the_payload_store() {
    let store = Arc::new(MemoryStore::with_queue_limits(
        Arc::new(SystemClock::new()),
        SMALL_QUEUE_MESSAGES,
        32,
    ));
    assert_eq!(store.max_message_bytes(), SMALL_QUEUE_MESSAGES);
    let settings = fast_settings();
    assert!(settings.large_payload_threshold > SMALL_QUEUE_MESSAGES);
    let hub = TaskHub::open(store, settings).await.unwrap();
    let mut reg = Registry::new();
    reg.activity("Len", |_c: ActivityContext, text: String| async move {
        Ok::<_, ActivityError>(text.len())
    });
    reg.orchestration(
        "Big",
        |ctx: OrchestrationContext, text: String| async move {
            let n: usize = ctx.call_activity("Len", text.clone()).await?;
            Ok::<_, OrchestrationError>(format!("{n}:{}", text.len()))
        },
    );
    let worker = Worker::start(&hub, reg).await.unwrap();
    let input = "z".repeat(3 * SMALL_QUEUE_MESSAGES);
    let id = hub
        .client()
        .start("Big", input.clone())
        .await
        .expect("a start whose message is over the store's limit still goes out");
    let done = hub
        .client()
        .wait_for_completion(&id, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        done.status(),
        OrchestrationStatus::Completed,
        "{:?}",
        done.row.failure
    );
    assert_eq!(
        done.output::<String>().unwrap(),
        Some(format!("{0}:{0}", input.len()))
    );
    worker.shutdown().await;
}
