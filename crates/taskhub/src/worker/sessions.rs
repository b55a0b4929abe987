//! The sessions this worker runs (one task per active instance, see
//! [`session`](super::session)): how a batch reaches its instance's session, how a session
//! leaves, and the cap on idle extended sessions.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use taskhub_core::InstanceId;
use tokio::sync::mpsc;

use super::delivery::Delivery;
use super::idle::IdleSessions;

/// A session's inbox: batches of deliveries for its instance.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Vec<Delivery>>;

/// The sessions of one worker, running or idle.
pub(crate) struct Sessions {
    senders: Mutex<HashMap<InstanceId, mpsc::UnboundedSender<Vec<Delivery>>>>,
    /// Extended sessions waiting for their next message, capped.
    pub idle: IdleSessions,
}

impl Sessions {
    /// No sessions; at most `max_idle` idle extended sessions.
    pub(crate) fn new(max_idle: usize) -> Self {
        Self {
            senders: Mutex::new(HashMap::new()),
            idle: IdleSessions::new(max_idle),
        }
    }

    fn senders(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<InstanceId, mpsc::UnboundedSender<Vec<Delivery>>>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True if this worker has a session for `instance` (running or idle).
    pub(crate) fn has(&self, instance: &InstanceId) -> bool {
        self.senders().contains_key(instance)
    }

    /// Sessions held now.
    pub(crate) fn count(&self) -> usize {
        self.senders().len()
    }

    /// Gives `batch` to the running session of `instance`: `None`. If there is none (or it
    /// is leaving), registers a new one and returns the batch and the inbox to start it with.
    pub(crate) fn hand(
        &self,
        instance: &InstanceId,
        batch: Vec<Delivery>,
    ) -> Option<(Vec<Delivery>, Inbox)> {
        let mut senders = self.senders();
        let batch = match senders.get(instance) {
            Some(tx) => match tx.send(batch) {
                Ok(()) => return None,
                Err(mpsc::error::SendError(batch)) => batch,
            },
            None => batch,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        if senders.insert(instance.clone(), tx).is_none() {
            crate::telemetry::record::session(true);
        }
        Some((batch, rx))
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

    #[test]
    fn a_batch_starts_a_session_once_and_then_joins_it() {
        let sessions = Sessions::new(4);
        let (_, mut inbox) = sessions
            .hand(&id("a"), Vec::new())
            .expect("no session yet: the caller starts one");
        assert!(sessions.has(&id("a")));
        assert_eq!(sessions.count(), 1);
        assert!(
            sessions.hand(&id("a"), Vec::new()).is_none(),
            "the running session takes the next batch"
        );
        assert!(inbox.try_recv().is_ok());
        assert!(!sessions.has(&id("b")));
    }

    #[test]
    fn a_session_leaves_only_when_nothing_raced_in() {
        let sessions = Sessions::new(4);
        let (_, mut inbox) = sessions.hand(&id("a"), Vec::new()).unwrap();
        assert!(sessions.hand(&id("a"), Vec::new()).is_none());
        assert!(
            sessions.leave(&id("a"), &mut inbox).is_some(),
            "a batch that raced in keeps the session"
        );
        assert!(sessions.has(&id("a")));
        assert!(sessions.leave(&id("a"), &mut inbox).is_none());
        assert!(!sessions.has(&id("a")));
        assert!(
            sessions.hand(&id("a"), Vec::new()).is_some(),
            "the next batch starts a new session"
        );
    }

    #[test]
    fn a_batch_for_a_session_whose_inbox_is_gone_starts_a_new_one() {
        let sessions = Sessions::new(4);
        let (_, inbox) = sessions.hand(&id("a"), Vec::new()).unwrap();
        drop(inbox);
        assert!(sessions.hand(&id("a"), Vec::new()).is_some());
        assert_eq!(sessions.count(), 1);
        assert_eq!(sessions.drop_all(), 1);
        assert_eq!(sessions.count(), 0);
    }
}
