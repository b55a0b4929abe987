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
//!   deleted if it is another queue message than the running one: its first delivery (the
//!   running one's own message, dequeued already, would come with a higher count), or one
//!   enqueued at another time than the running delivery's message (a copy delivered before,
//!   e.g. a claimed original whose claim ran out while the re-sent copy runs). The running
//!   one's message stays in the queue until its result is recorded and comes back if the run
//!   fails. A redelivered message with the running delivery's enqueue time may be that very
//!   message, redelivered after its visibility ran out (or a copy enqueued within the store's
//!   time resolution of it): it goes back, hidden and uncounted, for
//!   [`lease_interval`](crate::Settings::lease_interval) and is screened again then;
//! * any other work item runs, marked running until its [`RunMark`] is dropped: remembered as
//!   recorded if its result was recorded, else forgotten (the work item was not deleted and
//!   comes back to run again, as before).
//!
//! A torn outbox is re-sent no sooner than its grace after its writer committed it (see
//! `orchestration/outbox_screen.rs`), so recorded IDs are kept for four graces. Memory is bounded
//! (DESIGN invariant 5): at most [`CAPACITY`] recorded IDs, plus the running ones (at most one
//! per activity slot: a handed-over result keeps its slot until its turn).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::{MessageId, Timestamp};
use taskhub_storage::{Clock, Dequeued, QueueName};
use tracing::{debug, info};

use super::lifecycle::Lifecycle;
use super::recent::Recent;
use crate::hub::TaskHub;

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

/// A delivery of a work item, as the ledger judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// How many times its queue message was delivered, this delivery included.
    pub(crate) dequeue_count: u32,
    /// When its queue message was enqueued (by the store's clock): the same for every
    /// delivery of one queue message, so it tells the running message from another copy.
    pub(crate) enqueued_at: Timestamp,
}

/// The verdict for `delivery` of a work item whose ID this worker is running now (`running`:
/// the enqueue time of the running delivery's message) or has `recorded` the result of.
pub(crate) fn judge(running: Option<Timestamp>, recorded: bool, delivery: Delivered) -> Verdict {
    match running {
        _ if recorded => Verdict::Drop,
        None => Verdict::Run,
        Some(_) if delivery.dequeue_count <= 1 => Verdict::Drop,
        Some(at) if at != delivery.enqueued_at => Verdict::Drop,
        Some(_) => Verdict::Defer,
    }
}

#[derive(Debug)]
struct Ids {
    /// The running work items, with their delivery's enqueue time.
    running: HashMap<MessageId, Timestamp>,
    recorded: Recent<MessageId>,
}

/// The IDs of work items running in this worker and of those whose result it recorded lately.
#[derive(Debug)]
pub(crate) struct RunLedger {
    ids: Mutex<Ids>,
    clock: Arc<dyn Clock>,
}

impl RunLedger {
    /// An empty ledger that keeps recorded IDs for four `resend_grace`s (by `clock`).
    pub(crate) fn new(clock: Arc<dyn Clock>, resend_grace: Duration) -> Self {
        Self {
            ids: Mutex::new(Ids {
                running: HashMap::new(),
                recorded: Recent::new(CAPACITY, resend_grace.saturating_mul(4)),
            }),
            clock,
        }
    }

    /// Marks `id` running and returns its mark, or the verdict that keeps it from running.
    pub(crate) fn begin(
        self: &Arc<Self>,
        id: &MessageId,
        delivery: Delivered,
    ) -> Result<RunMark, Verdict> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let verdict = judge(
            ids.running.get(id).copied(),
            ids.recorded.get(id).is_some(),
            delivery,
        );
        if verdict != Verdict::Run {
            return Err(verdict);
        }
        ids.running.insert(id.clone(), delivery.enqueued_at);
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
pub(crate) async fn screen(
    runs: &Arc<RunLedger>,
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    m: &Dequeued,
    id: &MessageId,
) -> Option<RunMark> {
    let queue = QueueName::WorkItems;
    let store = hub.store();
    let delivery = Delivered {
        dequeue_count: m.dequeue_count,
        enqueued_at: m.enqueued_at,
    };
    match runs.begin(id, delivery) {
        Ok(mark) => Some(mark),
        Err(Verdict::Defer) => {
            debug!(message = %id, "a work item that runs here now came again; looking again later");
            let later = hub.settings().lease_interval;
            if let Err(e) = store.release(queue, &m.receipt, later).await {
                debug!(error = %e, "could not give back a copy of a running work item; it reappears after its visibility timeout");
            }
            None
        }
        Err(_) => {
            info!(message = %id, "dropped a copy of a work item this worker runs or ran");
            match store.delete(queue, &m.receipt).await {
                Ok(()) => lifecycle.stat(|s| s.work_item_copies_dropped += 1),
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
    use taskhub_storage::ManualClock;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn delivered(dequeue_count: u32, enqueued_at: u64) -> Delivered {
        Delivered {
            dequeue_count,
            enqueued_at: at(enqueued_at),
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(judge(None, false, delivered(1, 0)), Verdict::Run);
        assert_eq!(judge(None, false, delivered(5, 0)), Verdict::Run);
        assert_eq!(judge(None, true, delivered(1, 0)), Verdict::Drop);
        assert_eq!(judge(None, true, delivered(3, 0)), Verdict::Drop);
        // Running: a first delivery, or a message enqueued at another time, is another copy.
        assert_eq!(judge(Some(at(0)), false, delivered(1, 0)), Verdict::Drop);
        assert_eq!(judge(Some(at(0)), false, delivered(2, 7)), Verdict::Drop);
        // The running message itself may come again: it is never deleted while it runs.
        assert_eq!(judge(Some(at(7)), false, delivered(2, 7)), Verdict::Defer);
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
        let run_a = ledger.begin(&a, delivered(1, 0)).unwrap();
        let run_b = ledger.begin(&b, delivered(1, 0)).unwrap();
        assert_eq!(
            ledger.begin(&a, delivered(1, 0)).unwrap_err(),
            Verdict::Drop
        );
        assert_eq!(
            ledger.begin(&a, delivered(2, 0)).unwrap_err(),
            Verdict::Defer
        );
        run_a.recorded();
        drop(run_a);
        drop(run_b);
        assert_eq!(
            ledger.begin(&a, delivered(1, 0)).unwrap_err(),
            Verdict::Drop
        );
        let again = ledger
            .begin(&b, delivered(2, 0))
            .expect("a run without a result is forgotten");
        drop(again);
        // Kept four graces, then forgotten as later results are recorded.
        clock.advance(Duration::from_secs(121));
        let c = ledger.begin(&MessageId::random(), delivered(1, 0)).unwrap();
        c.recorded();
        drop(c);
        assert!(ledger.begin(&a, delivered(1, 0)).is_ok());
    }
}
