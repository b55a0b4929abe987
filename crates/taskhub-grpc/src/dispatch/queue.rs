//! One worker's stream queue: the work items sent to it and not yet read by its `GetWorkItems`
//! stream (tonic reads them as fast as HTTP/2 flow control lets it, so a worker that does not
//! read leaves them here). Bounded in items and bytes by the dispatcher (it hands a worker
//! nothing while its queue is full, whatever capacity it declared); it remembers since when
//! the stream has not read, so the dispatcher can close a stalled stream; and an item taken
//! back (timed out, withdrawn) leaves it, so it is never queued twice on one stream.
//!
//! Lock order: the dispatcher's state, then a queue; the stream takes only the queue's lock.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tonic::Status;

use crate::wire::OutgoingWorkItem;

/// An item waiting to be read.
#[derive(Debug)]
struct Queued {
    item: OutgoingWorkItem,
    bytes: usize,
    /// The dispatcher's item (`None`: a health ping).
    id: Option<u64>,
}

#[derive(Debug, Default)]
struct Inner {
    items: VecDeque<Queued>,
    bytes: usize,
    /// How many of `items` are work items (not health pings).
    work: usize,
    /// Since when the stream has had unread work items and read nothing (`None`: it has
    /// none; an unread health ping alone is no stall).
    unread_since: Option<Duration>,
    waker: Option<Waker>,
    /// Closed by the dispatcher: the stream answers `end` (if any), then ends.
    closed: bool,
    end: Option<Status>,
}

/// The bounds of a queue (see `DispatcherSettings::stream_queue_items`/`_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) items: usize,
    pub(crate) bytes: usize,
}

/// A worker's stream queue, shared by the dispatcher's state (which fills it) and the
/// worker's stream (which reads it).
#[derive(Debug, Default)]
pub(crate) struct StreamQueue {
    inner: Mutex<Inner>,
}

/// What a read found.
pub(crate) struct Read {
    /// The item, the error that ends the stream, or nothing (the stream ends).
    pub(crate) next: Option<Result<OutgoingWorkItem, Status>>,
    /// True if the queue was full before this read (the dispatcher may hand out more now).
    pub(crate) made_room: bool,
}

impl StreamQueue {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True if another item may be queued within `bounds` (an item of any size goes into an
    /// empty queue: a large history must still go out).
    pub(crate) fn has_room(&self, bounds: Bounds) -> bool {
        let q = self.lock();
        !q.closed && fits(&q, bounds)
    }

    /// Queues `item` (dispatcher item `id`, `None` for a ping) at monotonic time `now`; gives
    /// it back if the queue is closed.
    pub(crate) fn push(
        &self,
        item: OutgoingWorkItem,
        id: Option<u64>,
        now: Duration,
    ) -> Result<(), Box<OutgoingWorkItem>> {
        let bytes = prost::Message::encoded_len(&item);
        let mut q = self.lock();
        if q.closed {
            return Err(Box::new(item));
        }
        q.bytes = q.bytes.saturating_add(bytes);
        q.items.push_back(Queued { item, bytes, id });
        if id.is_some() {
            q.work += 1;
            if q.unread_since.is_none() {
                q.unread_since = Some(now);
            }
        }
        if let Some(w) = q.waker.take() {
            w.wake();
        }
        Ok(())
    }

    /// Takes item `id` out if it is still unread (it was taken back from this worker).
    pub(crate) fn remove(&self, id: u64, now: Duration) {
        let mut q = self.lock();
        if q.work == 0 {
            return;
        }
        if let Some(at) = q.items.iter().position(|i| i.id == Some(id)) {
            if let Some(gone) = q.items.remove(at) {
                q.bytes = q.bytes.saturating_sub(gone.bytes);
                q.work = q.work.saturating_sub(1);
            }
            if q.work == 0 {
                q.unread_since = None;
            } else if at == 0 {
                // The oldest unread item left: what waits now waits since at most now.
                q.unread_since = Some(now);
            }
        }
    }

    /// How many items (pings too) wait unread, and since when the stream has left work
    /// items unread.
    pub(crate) fn unread(&self) -> (usize, Option<Duration>) {
        let q = self.lock();
        (q.items.len(), q.unread_since)
    }

    /// Closes the queue: its unread items are dropped (the dispatcher gives their work items
    /// to other workers), and the stream answers `end` (if any) and ends.
    pub(crate) fn close(&self, end: Option<Status>) {
        let mut q = self.lock();
        q.closed = true;
        q.end = end;
        q.items.clear();
        q.bytes = 0;
        q.work = 0;
        q.unread_since = None;
        if let Some(w) = q.waker.take() {
            w.wake();
        }
    }

    /// The stream's read at monotonic time `now`, within `bounds`.
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        bounds: Bounds,
        now: Duration,
    ) -> Poll<Read> {
        let mut q = self.lock();
        if q.closed {
            return Poll::Ready(Read {
                next: q.end.take().map(Err),
                made_room: false,
            });
        }
        let was_full = !fits(&q, bounds);
        let Some(next) = q.items.pop_front() else {
            q.waker = Some(cx.waker().clone());
            return Poll::Pending;
        };
        q.bytes = q.bytes.saturating_sub(next.bytes);
        if next.id.is_some() {
            q.work = q.work.saturating_sub(1);
        }
        q.unread_since = (q.work > 0).then_some(now);
        Poll::Ready(Read {
            next: Some(Ok(next.item)),
            made_room: was_full,
        })
    }
}

fn fits(q: &Inner, bounds: Bounds) -> bool {
    q.items.is_empty() || (q.items.len() < bounds.items && q.bytes < bounds.bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use std::task::Context;

    use futures_util::task::noop_waker_ref;

    use super::*;
    use crate::proto::{work_item, ActivityRequest, WorkItem};

    const B: Bounds = Bounds {
        items: 2,
        bytes: 1 << 20,
    };

    fn item(name: &str) -> OutgoingWorkItem {
        OutgoingWorkItem::from(WorkItem {
            request: Some(work_item::Request::ActivityRequest(ActivityRequest {
                name: name.into(),
                ..ActivityRequest::default()
            })),
            completion_token: String::new(),
        })
    }

    fn read(q: &StreamQueue, now: Duration) -> Option<Read> {
        match q.poll_read(&mut Context::from_waker(noop_waker_ref()), B, now) {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None,
        }
    }

    #[test]
    fn a_queue_is_bounded_and_a_read_makes_room() {
        let q = StreamQueue::default();
        let t = Duration::from_secs(1);
        assert!(q.has_room(B));
        q.push(item("a"), Some(1), t).unwrap();
        q.push(item("b"), Some(2), t).unwrap();
        assert!(!q.has_room(B), "two items is the bound");
        assert_eq!(q.unread(), (2, Some(t)));
        let r = read(&q, t * 2).unwrap();
        assert!(r.made_room);
        assert_eq!(q.unread(), (1, Some(t * 2)), "a read restarts the clock");
        assert!(q.has_room(B));
        let r = read(&q, t * 3).unwrap();
        assert!(!r.made_room);
        assert_eq!(q.unread(), (0, None));
        assert!(read(&q, t * 3).is_none(), "nothing to read: pending");
    }

    #[test]
    fn an_unread_ping_alone_is_no_stall() {
        let q = StreamQueue::default();
        q.push(item("ping"), None, Duration::ZERO).unwrap();
        assert_eq!(q.unread(), (1, None));
        q.push(item("a"), Some(1), Duration::from_secs(2)).unwrap();
        assert_eq!(q.unread(), (2, Some(Duration::from_secs(2))));
    }

    #[test]
    fn a_byte_bound_lets_one_large_item_into_an_empty_queue_only() {
        let q = StreamQueue::default();
        let tiny = Bounds {
            items: 10,
            bytes: 1,
        };
        assert!(q.has_room(tiny));
        q.push(item("large"), Some(1), Duration::ZERO).unwrap();
        assert!(!q.has_room(tiny));
    }

    #[test]
    fn an_item_taken_back_leaves_the_queue() {
        let q = StreamQueue::default();
        let t = Duration::from_secs(1);
        q.push(item("a"), Some(1), t).unwrap();
        q.push(item("b"), Some(2), t).unwrap();
        q.remove(1, t * 5);
        assert_eq!(q.unread(), (1, Some(t * 5)));
        q.remove(2, t * 6);
        assert_eq!(q.unread(), (0, None));
        q.remove(3, t * 6);
    }

    #[test]
    fn a_closed_queue_ends_its_stream_with_the_reason_and_takes_nothing() {
        let q = StreamQueue::default();
        q.push(item("a"), Some(1), Duration::ZERO).unwrap();
        q.close(Some(Status::unavailable("stalled")));
        assert!(!q.has_room(B));
        assert!(q.push(item("b"), Some(2), Duration::ZERO).is_err());
        let r = read(&q, Duration::ZERO).unwrap();
        assert_eq!(r.next.unwrap().unwrap_err().message(), "stalled");
        assert!(read(&q, Duration::ZERO).unwrap().next.is_none());
    }
}
