//! The sessions this worker runs (one task per active instance, see
//! `intake::session`): how a batch reaches its instance's session, how a session leaves, and the cap on idle extended sessions.
//!
//! Fairness: while a session waits on a remote executor (an SDK worker deciding its turn or
//! running its entity batch, which may take up to the executor's timeout), the control-queue
//! messages waiting in its inbox hold prefetch-buffer slots that no other instance can use.
//! So an instance in a remote wait may have at most its share of the buffer waiting
//! ([`instance_share`]: a quarter of `control_queue_buffer_threshold`); what comes for it
//! beyond that goes back to its queue uncounted, for a while (see [`over_share_delay`]). An
//! instance that floods itself and leaves its turn unanswered so takes at most a quarter of
//! the buffer, and the others' messages keep being fetched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::InstanceId;
use tokio::sync::mpsc;

use super::delivery::Delivery;
use super::idle::IdleSessions;

/// The most control-queue messages that may wait for a session in a remote wait: a quarter
/// of the prefetch buffer (at least one).
pub(crate) fn instance_share(buffer: usize) -> usize {
    (buffer / 4).max(1)
}

/// How long messages over an instance's share stay back in their queue: as long as its remote
/// wait has lasted so far, from 1 s to 30 s (a wait that has lasted long will likely last
/// longer; the messages are fetched again after it, not polled over and over meanwhile).
pub(crate) fn over_share_delay(waited: Duration) -> Duration {
    waited.clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// A session's inbox: batches of deliveries for its instance.
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<Vec<Delivery>>,
    /// The control-queue deliveries sent and not received yet.
    waiting: Arc<AtomicUsize>,
}

impl Inbox {
    fn took(&self, batch: &[Delivery]) {
        let n = buffered(batch);
        if n > 0 {
            self.waiting.fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// The next batch, if one is there.
    pub(crate) fn try_recv(&mut self) -> Result<Vec<Delivery>, mpsc::error::TryRecvError> {
        let batch = self.rx.try_recv()?;
        self.took(&batch);
        Ok(batch)
    }

    /// The next batch; `None` once every sender is gone.
    pub(crate) async fn recv(&mut self) -> Option<Vec<Delivery>> {
        let batch = self.rx.recv().await?;
        self.took(&batch);
        Some(batch)
    }
}

/// How many of `batch` came from a control queue (and hold a prefetch-buffer slot).
fn buffered(batch: &[Delivery]) -> usize {
    batch.iter().filter(|d| !d.is_local()).count()
}

/// Splits `batch` into what fits in `room` control-queue deliveries (the oldest first, and
/// every handed-over result: those hold no buffer slot) and the rest.
fn split_over(batch: Vec<Delivery>, room: usize) -> (Vec<Delivery>, Vec<Delivery>) {
    split_by(batch, room, |d| !d.is_local())
}

fn split_by<T>(batch: Vec<T>, room: usize, counts: impl Fn(&T) -> bool) -> (Vec<T>, Vec<T>) {
    let mut left = room;
    let mut over = Vec::new();
    let mut kept = Vec::with_capacity(batch.len());
    for d in batch {
        if !counts(&d) {
            kept.push(d);
        } else if left > 0 {
            left -= 1;
            kept.push(d);
        } else {
            over.push(d);
        }
    }
    (kept, over)
}

/// A running session, as the pollers see it.
struct Entry {
    tx: mpsc::UnboundedSender<Vec<Delivery>>,
    waiting: Arc<AtomicUsize>,
    /// Since when (monotonic) it has been waiting on a remote executor.
    remote_since: Option<Duration>,
}

/// What became of a batch handed to [`Sessions::hand`].
pub(crate) enum Handed {
    /// No session was running: start one with this batch and inbox.
    Start(Vec<Delivery>, Inbox),
    /// The running session took it; `over` did not fit in the instance's share while it
    /// waits on a remote executor (give it back with `delay`).
    Joined {
        /// The deliveries over the share (empty: all taken).
        over: Vec<Delivery>,
        /// How long they stay back.
        delay: Duration,
    },
}

/// The sessions of one worker, running or idle.
pub(crate) struct Sessions {
    senders: Mutex<HashMap<InstanceId, Entry>>,
    /// Extended sessions waiting for their next message, capped.
    pub idle: IdleSessions,
    /// See [`instance_share`].
    share: usize,
}

impl Sessions {
    /// No sessions; at most `max_idle` idle extended sessions; a session in a remote wait may
    /// have `share` control-queue messages waiting.
    pub(crate) fn new(max_idle: usize, share: usize) -> Self {
        Self {
            senders: Mutex::new(HashMap::new()),
            idle: IdleSessions::new(max_idle),
            share: share.max(1),
        }
    }

    fn senders(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceId, Entry>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session of `instance` waits on a remote executor from monotonic time `since`
    /// (`None`: no longer).
    pub(crate) fn remote_wait(&self, instance: &InstanceId, since: Option<Duration>) {
        if let Some(e) = self.senders().get_mut(instance) {
            e.remote_since = since;
        }
    }

    /// True if this worker has a session for `instance` (running or idle).
    pub(crate) fn has(&self, instance: &InstanceId) -> bool {
        self.senders().contains_key(instance)
    }

    /// Sessions held now.
    pub(crate) fn count(&self) -> usize {
        self.senders().len()
    }

    /// Gives `batch` to the running session of `instance` (what is over its share while it
    /// waits on a remote executor comes back, see the module documentation); `now` is the
    /// monotonic time. If there is none (or it is leaving), registers a new one and returns
    /// the batch and the inbox to start it with.
    pub(crate) fn hand(
        &self,
        instance: &InstanceId,
        batch: Vec<Delivery>,
        now: Duration,
    ) -> Handed {
        let mut senders = self.senders();
        let batch = match senders.get(instance) {
            Some(e) => {
                let (batch, over, delay) = match e.remote_since {
                    Some(since) => {
                        let room = self.share.saturating_sub(e.waiting.load(Ordering::SeqCst));
                        let (kept, over) = split_over(batch, room);
                        (kept, over, over_share_delay(now.saturating_sub(since)))
                    }
                    None => (batch, Vec::new(), Duration::ZERO),
                };
                let n = buffered(&batch);
                e.waiting.fetch_add(n, Ordering::SeqCst);
                match e.tx.send(batch) {
                    Ok(()) => return Handed::Joined { over, delay },
                    Err(mpsc::error::SendError(mut batch)) => {
                        e.waiting.fetch_sub(n, Ordering::SeqCst);
                        // The session is leaving: the new one takes everything.
                        batch.extend(over);
                        batch
                    }
                }
            }
            None => batch,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let waiting = Arc::new(AtomicUsize::new(0));
        let entry = Entry {
            tx,
            waiting: Arc::clone(&waiting),
            remote_since: None,
        };
        if senders.insert(instance.clone(), entry).is_none() {
            crate::telemetry::record::session(true);
        }
        Handed::Start(batch, Inbox { rx, waiting })
    }

    /// The session of `instance` leaves, unless a batch raced in (under the lock [`hand`]
    /// sends under): then that batch is returned and the session stays.
    ///
    /// [`hand`]: Self::hand
    pub(crate) fn leave(&self, instance: &InstanceId, inbox: &mut Inbox) -> Option<Vec<Delivery>> {
        let mut senders = self.senders();
        if let Ok(batch) = inbox.try_recv() {
            return Some(batch);
        }
        if senders.remove(instance).is_some() {
            crate::telemetry::record::session(false);
        }
        None
    }

    /// Drops every session's sender (the batches still queued for them are dropped with
    /// them); returns how many there were.
    pub(crate) fn drop_all(&self) -> usize {
        let senders: Vec<_> = self.senders().drain().collect();
        senders.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use super::*;

    fn id(s: &str) -> InstanceId {
        InstanceId::new(s).unwrap()
    }

    const T: Duration = Duration::from_secs(1);

    fn started(h: Handed) -> Inbox {
        match h {
            Handed::Start(_, inbox) => inbox,
            Handed::Joined { .. } => panic!("joined a running session"),
        }
    }

    fn joined(h: Handed) -> bool {
        matches!(h, Handed::Joined { ref over, .. } if over.is_empty())
    }

    #[test]
    fn a_batch_starts_a_session_once_and_then_joins_it() {
        let sessions = Sessions::new(4, 16);
        let mut inbox = started(sessions.hand(&id("a"), Vec::new(), T));
        assert!(sessions.has(&id("a")));
        assert_eq!(sessions.count(), 1);
        assert!(
            joined(sessions.hand(&id("a"), Vec::new(), T)),
            "the running session takes the next batch"
        );
        assert!(inbox.try_recv().is_ok());
        assert!(!sessions.has(&id("b")));
    }

    #[test]
    fn a_session_leaves_only_when_nothing_raced_in() {
        let sessions = Sessions::new(4, 16);
        let mut inbox = started(sessions.hand(&id("a"), Vec::new(), T));
        assert!(joined(sessions.hand(&id("a"), Vec::new(), T)));
        assert!(
            sessions.leave(&id("a"), &mut inbox).is_some(),
            "a batch that raced in keeps the session"
        );
        assert!(sessions.has(&id("a")));
        assert!(sessions.leave(&id("a"), &mut inbox).is_none());
        assert!(!sessions.has(&id("a")));
        let _ = started(sessions.hand(&id("a"), Vec::new(), T));
    }

    #[test]
    fn a_batch_for_a_session_whose_inbox_is_gone_starts_a_new_one() {
        let sessions = Sessions::new(4, 16);
        let inbox = started(sessions.hand(&id("a"), Vec::new(), T));
        drop(inbox);
        let _ = started(sessions.hand(&id("a"), Vec::new(), T));
        assert_eq!(sessions.count(), 1);
        assert_eq!(sessions.drop_all(), 1);
        assert_eq!(sessions.count(), 0);
    }

    #[test]
    fn a_split_keeps_the_oldest_within_the_room_and_every_uncounted_one() {
        // Odd numbers stand for handed-over results (uncounted).
        let (kept, over) = split_by(vec![0, 1, 2, 3, 4, 6, 7, 8], 2, |n| n % 2 == 0);
        assert_eq!(kept, [0, 1, 2, 3, 7]);
        assert_eq!(over, [4, 6, 8]);
        let (kept, over) = split_by(vec![0, 2], 0, |n| n % 2 == 0);
        assert!(kept.is_empty());
        assert_eq!(over, [0, 2]);
    }

    #[test]
    fn the_share_is_a_quarter_of_the_buffer_and_the_delay_follows_the_wait() {
        assert_eq!(instance_share(64), 16);
        assert_eq!(instance_share(2), 1);
        let secs = Duration::from_secs;
        for (waited, delay) in [
            (Duration::ZERO, secs(1)),
            (secs(7), secs(7)),
            (secs(600), secs(30)),
        ] {
            assert_eq!(over_share_delay(waited), delay, "waited {waited:?}");
        }
    }
}
