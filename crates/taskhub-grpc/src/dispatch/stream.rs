//! One connected worker's stream of work items, read from its [`StreamQueue`]. When tonic
//! drops it (the worker disconnected, was killed, or the call was cancelled), the worker is
//! disconnected from the dispatcher and the items it held go to the others at once. Its
//! watchdog sends health pings and closes the stream once it leaves items unread for
//! [`stream_read_timeout`](super::DispatcherSettings::stream_read_timeout).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use tonic::Status;

use super::queue::StreamQueue;
use super::Inner;
use crate::wire::OutgoingWorkItem;

/// The stream `GetWorkItems` answers with.
pub(super) struct WorkerStream {
    pub(super) queue: Arc<StreamQueue>,
    pub(super) inner: Arc<Inner>,
    pub(super) worker: u64,
    /// Whether its protos predate `executionRewound` (the Go and Java SDKs, which fail a turn
    /// on an event they do not know): its turns go without it ([`OutgoingWorkItem::strip_rewinds`]).
    pub(super) no_rewind_events: bool,
}

impl Stream for WorkerStream {
    type Item = Result<OutgoingWorkItem, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let now = self.inner.clock.monotonic();
        let bounds = self.inner.settings.stream_bounds();
        let Poll::Ready(read) = self.queue.poll_read(cx, bounds, now) else {
            return Poll::Pending;
        };
        if read.made_room {
            // The queue had no room: items may be waiting for this worker.
            self.inner.lock().made_room(now);
        }
        let mut next = read.next;
        if self.no_rewind_events {
            if let Some(Ok(item)) = &mut next {
                item.strip_rewinds();
            }
        }
        Poll::Ready(next)
    }
}

impl Drop for WorkerStream {
    fn drop(&mut self) {
        let now = self.inner.clock.monotonic();
        self.inner.lock().disconnect(self.worker, now);
        tracing::info!(worker = self.worker, "SDK worker disconnected");
    }
}

/// Watches `worker`'s stream until it is gone: a health ping every
/// `health_ping_interval`, and the stream closed once it leaves items unread for
/// `stream_read_timeout`.
pub(super) async fn watch(inner: Arc<Inner>, worker: u64) {
    let s = &inner.settings;
    let read_timeout = s.stream_read_timeout.max(Duration::from_millis(1));
    // Look at least twice per read timeout, so a stall is caught within 1.5 of it.
    let tick = s
        .health_ping_interval
        .min(read_timeout / 2)
        .max(Duration::from_millis(1));
    let mut last_ping = inner.clock.monotonic();
    loop {
        inner.clock.sleep(tick).await;
        let now = inner.clock.monotonic();
        let mut state = inner.lock();
        if state.close_if_stalled(worker, read_timeout, now) {
            return;
        }
        if now.saturating_sub(last_ping) >= s.health_ping_interval {
            last_ping = now;
            if !state.ping(worker, now) {
                return;
            }
        }
    }
}
