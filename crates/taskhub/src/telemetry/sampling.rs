//! Queue sampling: on each lease pass a worker reads the length and oldest-message age of the
//! control queues of the partitions it holds and of the work-item queue
//! ([`QueueStore::stats`](taskhub_storage::QueueStore::stats)) and sets the queue gauges.
//!
//! Sampling costs storage calls (on Azure a Get Queue Metadata and a peek per queue and pass:
//! 30 to 60 billed operations a minute for an idle worker), so it is off until whoever
//! installs a metrics recorder turns it on with [`set_queue_sampling`]:
//! [`QueueSampling::Always`], or [`QueueSampling::WhileWatched`] — only while someone looks,
//! that is within [`WATCH_WINDOW`] (by the hub's `Clock`) of the last [`watched`] call for the
//! hub. `taskhub serve` and `taskhub worker --http` sample while watched, and their HTTP API
//! calls [`watched`] on every `/metrics` scrape and dashboard request, so an idle worker that
//! nobody watches makes no sampling calls. Everything else the runtime records is free
//! without a recorder.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

use taskhub_storage::{QueueName, QueueStore};

use super::record;
use crate::hub::TaskHub;

/// When the workers of this process sample queue depths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueSampling {
    /// Never (the default).
    Off,
    /// On every lease pass.
    Always,
    /// On the lease passes within [`WATCH_WINDOW`] of the last [`watched`] call for the hub.
    WhileWatched,
}

/// How long after someone last looked (see [`watched`]) queues are still sampled under
/// [`QueueSampling::WhileWatched`].
pub const WATCH_WINDOW: Duration = Duration::from_secs(60);

static MODE: AtomicU8 = AtomicU8::new(0);

/// Sets when the workers of this process sample queue depths.
pub fn set_queue_sampling(mode: QueueSampling) {
    let n = match mode {
        QueueSampling::Off => 0,
        QueueSampling::Always => 1,
        QueueSampling::WhileWatched => 2,
    };
    MODE.store(n, Ordering::Relaxed);
}

/// When the workers of this process sample queue depths.
#[must_use]
pub fn queue_sampling() -> QueueSampling {
    match MODE.load(Ordering::Relaxed) {
        1 => QueueSampling::Always,
        2 => QueueSampling::WhileWatched,
        _ => QueueSampling::Off,
    }
}

/// Turns queue sampling on every lease pass on (`true`, [`QueueSampling::Always`]) or off.
pub fn enable_queue_sampling(on: bool) {
    set_queue_sampling(if on {
        QueueSampling::Always
    } else {
        QueueSampling::Off
    });
}

/// True if queue sampling is not [`QueueSampling::Off`].
#[must_use]
pub fn queue_sampling_enabled() -> bool {
    queue_sampling() != QueueSampling::Off
}

/// Someone looks at `hub`'s metrics or dashboard now (a scrape, a dashboard request): under
/// [`QueueSampling::WhileWatched`] its workers in this process sample queues for the next
/// [`WATCH_WINDOW`], from their next lease pass.
pub fn watched(hub: &TaskHub) {
    let now = hub.clock().monotonic();
    // Stored plus one millisecond, so that zero means never.
    let ms = u64::try_from(now.as_millis())
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    hub.inner.watched_at.fetch_max(ms, Ordering::Relaxed);
}

/// The last time someone looked at a hub (see [`watched`]), for [`HubInner`](crate::hub).
#[derive(Debug, Default)]
pub(crate) struct WatchedAt(AtomicU64);

impl WatchedAt {
    fn fetch_max(&self, ms: u64, order: Ordering) {
        self.0.fetch_max(ms, order);
    }

    /// True if someone looked within [`WATCH_WINDOW`] before `now` (monotonic).
    fn recently(&self, now: Duration) -> bool {
        match self.0.load(Ordering::Relaxed) {
            0 => false,
            ms => now.saturating_sub(Duration::from_millis(ms - 1)) < WATCH_WINDOW,
        }
    }
}

/// True if `hub`'s workers should sample queues on this lease pass.
pub(crate) fn sampling_due(hub: &TaskHub) -> bool {
    match queue_sampling() {
        QueueSampling::Off => false,
        QueueSampling::Always => true,
        QueueSampling::WhileWatched => hub.inner.watched_at.recently(hub.clock().monotonic()),
    }
}

/// Samples `partitions`' control queues and the work-item queue of `hub`, if
/// [`sampling_due`]. A failed read leaves that queue's gauges as they were (the next pass
/// tries again).
pub(crate) async fn sample(hub: &TaskHub, partitions: impl IntoIterator<Item = u32>) {
    if !sampling_due(hub) {
        return;
    }
    let store: &dyn QueueStore = hub.store().as_ref();
    let clock = hub.clock();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_within_the_window() {
        let w = WatchedAt::default();
        let s = Duration::from_secs;
        assert!(!w.recently(s(0)), "never watched");
        assert!(!w.recently(s(1000)));
        w.fetch_max(
            u64::try_from(s(100).as_millis()).unwrap() + 1,
            Ordering::Relaxed,
        );
        assert!(w.recently(s(100)));
        assert!(w.recently(s(159)));
        assert!(!w.recently(s(160)));
    }
}
