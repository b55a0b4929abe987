//! The work items this worker runs or ran lately, by message ID, so that two copies of one work
//! item never both run in it (issue 20, item 12).
//!
//! Copies of one work item (one message ID) reach the work-item queue when a torn checkpoint's
//! outbox is re-sent although its writer had sent it before it stopped (the loader cannot tell
//! how far the writer got). The orchestration applies one result per task, but the activity
//! would run twice. So the activity dispatcher [screens](screen) every work item it dequeues or
//! claims before it runs it:
//!
//! * a copy whose result this worker has recorded (the reply committed to the control queue, or
//!   the result applied by a turn whose checkpoint deleted the work item) is deleted: its
//!   result would be discarded as a duplicate anyway;
//! * a copy of a work item this worker is running now (or whose result waits for its turn) is
//!   deleted if this is its first delivery: it is another queue message than the running one
//!   (whose own message, dequeued already, would come with a higher count), which stays in the
//!   queue until its result is recorded and comes back if the run fails. A copy delivered
//!   before may be the running item's own message, redelivered after its visibility ran out:
//!   it goes back, hidden and uncounted, for [`lease_interval`](crate::Settings::lease_interval)
//!   and is screened again then;
//! * any other work item runs, marked running until its [`RunMark`] is dropped: remembered as
//!   recorded if its result was recorded, else forgotten (the work item was not deleted and
//!   comes back to run again, as before).
//!
//! A torn outbox is re-sent no sooner than a lease interval after its writer committed it
//! (see `turn/load.rs`), so recorded IDs are kept for four lease intervals. Memory is bounded
//! (DESIGN invariant 5): at most [`CAPACITY`] recorded IDs, plus the running ones (at most one
//! per activity slot: a handed-over result keeps its slot until its turn).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::MessageId;
use taskhub_storage::{Clock, Dequeued, QueueName};
use tracing::{debug, info};

use super::recent::Recent;
use super::Shared;

/// The most recorded work-item IDs remembered (about 100 bytes each).
pub(crate) const CAPACITY: usize = 16_384;

/// What to do with a work item, judged on what this worker knows of its message ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run it.
    Run,
    /// Delete it: a copy whose result is recorded, or a fresh copy of a running one.
    Drop,
    /// Give it back for a while, uncounted: it may be the running item's own message.
    Defer,
}

/// The verdict for a work item delivered `dequeue_count` times whose ID this worker is
/// `running` now or has `recorded` the result of.
pub(crate) fn judge(running: bool, recorded: bool, dequeue_count: u32) -> Verdict {
    if recorded {
        Verdict::Drop
    } else if !running {
        Verdict::Run
    } else if dequeue_count <= 1 {
        Verdict::Drop
    } else {
        Verdict::Defer
    }
}

#[derive(Debug)]
struct Ids {
    running: HashSet<MessageId>,
    recorded: Recent<MessageId>,
}

/// The IDs of work items running in this worker and of those whose result it recorded lately.
#[derive(Debug)]
pub(crate) struct RunLedger {
    ids: Mutex<Ids>,
    clock: Arc<dyn Clock>,
}

impl RunLedger {
    /// An empty ledger that keeps recorded IDs for four `lease_interval`s (by `clock`).
    pub(crate) fn new(clock: Arc<dyn Clock>, lease_interval: Duration) -> Self {
        Self {
            ids: Mutex::new(Ids {
                running: HashSet::new(),
                recorded: Recent::new(CAPACITY, lease_interval.saturating_mul(4)),
            }),
            clock,
        }
    }

    /// Marks `id` running and returns its mark, or the verdict that keeps it from running.
    pub(crate) fn begin(
        self: &Arc<Self>,
        id: &MessageId,
        dequeue_count: u32,
    ) -> Result<RunMark, Verdict> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let verdict = judge(
            ids.running.contains(id),
            ids.recorded.get(id).is_some(),
            dequeue_count,
        );
        if verdict != Verdict::Run {
            return Err(verdict);
        }
        ids.running.insert(id.clone());
        Ok(RunMark {
            ledger: self.clone(),
            id: id.clone(),
            recorded: AtomicBool::new(false),
        })
    }
}

/// A work item marked running; dropped, it is remembered as recorded (if
/// [`recorded`](Self::recorded) was called) or forgotten.
#[derive(Debug)]
pub(crate) struct RunMark {
    ledger: Arc<RunLedger>,
    id: MessageId,
    recorded: AtomicBool,
}

impl RunMark {
    /// The work item's result is recorded and the work item deleted.
    pub(crate) fn recorded(&self) {
        self.recorded.store(true, Ordering::SeqCst);
    }
}

impl Drop for RunMark {
    fn drop(&mut self) {
        let now = self.ledger.clock.monotonic();
        let mut ids = self
            .ledger
            .ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ids.running.remove(&self.id);
        if self.recorded.load(Ordering::SeqCst) {
            ids.recorded.note(self.id.clone(), now);
        }
    }
}

/// Marks the work item `m` (of message ID `id`) running and returns its mark; or deletes it
/// (a duplicate) or gives it back for a while (see the module docs) and returns `None`.
pub(crate) async fn screen(shared: &Shared, m: &Dequeued, id: &MessageId) -> Option<RunMark> {
    let queue = QueueName::WorkItems;
    let store = shared.hub.store();
    match shared.runs.begin(id, m.dequeue_count) {
        Ok(mark) => Some(mark),
        Err(Verdict::Defer) => {
            debug!(message = %id, "a work item that runs here now came again; looking again later");
            let later = shared.hub.settings().lease_interval;
            if let Err(e) = store.release(queue, &m.receipt, later).await {
                debug!(error = %e, "could not give back a copy of a running work item; it reappears after its visibility timeout");
            }
            None
        }
        Err(_) => {
            info!(message = %id, "dropped a copy of a work item this worker runs or ran");
            match store.delete(queue, &m.receipt).await {
                Ok(()) => shared.stat(|s| s.work_item_copies_dropped += 1),
                Err(e) => {
                    debug!(error = %e, "could not delete a copy of a work item; it is screened again when it reappears");
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;
    use taskhub_storage::ManualClock;

    #[test]
    fn verdicts() {
        assert_eq!(judge(false, false, 1), Verdict::Run);
        assert_eq!(judge(false, false, 5), Verdict::Run);
        assert_eq!(judge(false, true, 1), Verdict::Drop);
        assert_eq!(judge(false, true, 3), Verdict::Drop);
        assert_eq!(judge(true, false, 1), Verdict::Drop);
        assert_eq!(judge(true, false, 2), Verdict::Defer);
    }

    fn ledger() -> (Arc<RunLedger>, ManualClock) {
        let clock = ManualClock::new(Timestamp::from_millis(0));
        let ledger = Arc::new(RunLedger::new(
            Arc::new(clock.clone()),
            Duration::from_secs(30),
        ));
        (ledger, clock)
    }

    #[test]
    fn a_recorded_result_is_remembered_and_a_failed_run_forgotten() {
        let (ledger, clock) = ledger();
        let a = MessageId::random();
        let b = MessageId::random();
        let run_a = ledger.begin(&a, 1).unwrap();
        let run_b = ledger.begin(&b, 1).unwrap();
        assert_eq!(ledger.begin(&a, 1).unwrap_err(), Verdict::Drop);
        assert_eq!(ledger.begin(&a, 2).unwrap_err(), Verdict::Defer);
        run_a.recorded();
        drop(run_a);
        drop(run_b);
        assert_eq!(ledger.begin(&a, 1).unwrap_err(), Verdict::Drop);
        let again = ledger
            .begin(&b, 2)
            .expect("a run without a result is forgotten");
        drop(again);
        // Kept four lease intervals, then forgotten as later results are recorded.
        clock.advance(Duration::from_secs(121));
        let c = ledger.begin(&MessageId::random(), 1).unwrap();
        c.recorded();
        drop(c);
        assert!(ledger.begin(&a, 1).is_ok());
    }
}
