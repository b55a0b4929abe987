//! Queue sampling: on each lease pass a worker reads the length and oldest-message age of the
//! control queues of the partitions it holds and of the work-item queue
//! ([`QueueStore::stats`](taskhub_storage::QueueStore::stats)) and sets the queue gauges.
//!
//! Sampling costs storage calls (one per queue and pass: operations billed on Azure), so it is
//! off until whoever installs a metrics recorder turns it on with [`enable_queue_sampling`]
//! (`taskhub serve` and `taskhub worker --http` do). Everything else the runtime records is
//! free without a recorder.

use std::sync::atomic::{AtomicBool, Ordering};

use taskhub_storage::{QueueName, QueueStore};

use super::record;

static SAMPLE_QUEUES: AtomicBool = AtomicBool::new(false);

/// Turns queue sampling on (`true`) or off for every worker of this process.
pub fn enable_queue_sampling(on: bool) {
    SAMPLE_QUEUES.store(on, Ordering::Relaxed);
}

/// True if queue sampling is on.
#[must_use]
pub fn queue_sampling_enabled() -> bool {
    SAMPLE_QUEUES.load(Ordering::Relaxed)
}

/// Samples `partitions`' control queues and the work-item queue, if sampling is on. A failed
/// read leaves that queue's gauges as they were (the next pass tries again).
pub(crate) async fn sample(
    store: &dyn QueueStore,
    clock: &dyn taskhub_storage::Clock,
    partitions: impl IntoIterator<Item = u32>,
) {
    if !queue_sampling_enabled() {
        return;
    }
    let queues = partitions
        .into_iter()
        .map(QueueName::Control)
        .chain([QueueName::WorkItems]);
    for queue in queues {
        if let Ok(stats) = store.stats(queue).await {
            let now = clock.now();
            let age = stats
                .oldest_enqueued_at
                .map(|t| now.saturating_since(t))
                .unwrap_or_default();
            record::queue(queue, stats.length, age);
        }
    }
}
