//! The cap on idle extended sessions: memory grows with active sessions, not with the number of
//! instances (DESIGN invariant 5).
//!
//! An extended session that waits for its next message registers here. Once more than
//! `max_extended_sessions` wait at once, the one that has waited longest is told to leave: it
//! drops its cached orchestration, and its next message loads the history again. The instances
//! that were busy most recently stay in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use taskhub_core::InstanceId;
use tokio::sync::Notify;

/// The idle extended sessions of one worker, oldest first.
#[derive(Debug)]
pub(crate) struct IdleSessions {
    cap: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// By the order they became idle: the instance and how to tell it to leave.
    waiting: BTreeMap<u64, (InstanceId, Arc<Notify>)>,
    /// Sessions told to leave so far.
    evictions: u64,
}

/// A session's place among the idle ones; [`IdleSessions::leave`] gives it back.
#[derive(Debug)]
pub(crate) struct Waiting {
    seq: u64,
    evict: Arc<Notify>,
}

impl Waiting {
    /// Completes when the session must leave to make room for a newer idle one.
    pub(crate) async fn evicted(&self) {
        self.evict.notified().await;
    }
}

impl IdleSessions {
    /// At most `cap` idle sessions (at least one).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Registers `instance` as idle; tells the longest-idle session to leave if that makes one
    /// too many.
    pub(crate) fn enter(&self, instance: &InstanceId) -> Waiting {
        let mut inner = self.lock();
        let seq = inner.next;
        inner.next += 1;
        let evict = Arc::new(Notify::new());
        inner
            .waiting
            .insert(seq, (instance.clone(), Arc::clone(&evict)));
        while inner.waiting.len() > self.cap {
            let Some((_, (_, notify))) = inner.waiting.pop_first() else {
                break;
            };
            // A stored permit: the session leaves even if it is not polling right now.
            notify.notify_one();
            inner.evictions += 1;
        }
        Waiting { seq, evict }
    }

    /// The session is busy again (or gone).
    pub(crate) fn leave(&self, waiting: &Waiting) {
        self.lock().waiting.remove(&waiting.seq);
    }

    /// Sessions waiting now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Sessions told to leave so far.
    pub(crate) fn evictions(&self) -> u64 {
        self.lock().evictions
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use super::*;

    fn id(s: &str) -> InstanceId {
        InstanceId::new(s).unwrap()
    }

    // Paused time: a "not told" timeout runs out only once nothing else can run.
    #[tokio::test(start_paused = true)]
    async fn the_longest_idle_session_leaves_when_there_are_too_many() {
        let idle = IdleSessions::new(2);
        let a = idle.enter(&id("a"));
        let b = idle.enter(&id("b"));
        assert_eq!(idle.len(), 2);
        let c = idle.enter(&id("c"));
        assert_eq!(idle.len(), 2);
        assert_eq!(idle.evictions(), 1);
        // `a` was told (even though nobody was waiting on it yet); `b` and `c` were not.
        tokio::time::timeout(Duration::from_secs(1), a.evicted())
            .await
            .unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(20), b.evicted())
            .await
            .is_err());
        // A session that became busy again gives its place back: no eviction needed.
        idle.leave(&b);
        let _d = idle.enter(&id("d"));
        assert_eq!(idle.evictions(), 1);
        assert!(tokio::time::timeout(Duration::from_millis(20), c.evicted())
            .await
            .is_err());
    }
}
