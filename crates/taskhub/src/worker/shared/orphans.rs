//! Deliveries dropped unfinished while the worker is abandoned (its handle dropped, or its
//! shutdown timed out): recorded so they are given back, visible at once, afterwards.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use taskhub_storage::{QueueName, Receipt};

/// Deliveries dropped unfinished because their worker is being abandoned (its handle was
/// dropped, or its shutdown timed out): they are given back afterwards, so their messages are
/// visible again at once instead of after their visibility timeout.
#[derive(Debug, Default)]
pub(crate) struct Orphans {
    abandoning: AtomicBool,
    dropped: Mutex<Vec<(QueueName, Receipt)>>,
}

impl Orphans {
    /// From now on, a delivery dropped is an orphan to give back.
    pub(crate) fn abandon_all(&self) {
        self.abandoning.store(true, Ordering::SeqCst);
    }

    /// The orphans so far (each once).
    pub(crate) fn take(&self) -> Vec<(QueueName, Receipt)> {
        std::mem::take(&mut *self.dropped.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Records its delivery as an orphan if dropped once the worker is being abandoned.
#[derive(Debug)]
pub(crate) struct OrphanGuard {
    orphans: Arc<Orphans>,
    queue: QueueName,
    receipt: Receipt,
}

impl OrphanGuard {
    pub(crate) fn new(orphans: Arc<Orphans>, queue: QueueName, receipt: Receipt) -> Self {
        Self {
            orphans,
            queue,
            receipt,
        }
    }
}

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        if self.orphans.abandoning.load(Ordering::SeqCst) {
            self.orphans
                .dropped
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((self.queue, self.receipt.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deliveries_dropped_while_abandoning_are_orphans() {
        let orphans = Arc::new(Orphans::default());
        let q = QueueName::Control(1);
        drop(OrphanGuard::new(orphans.clone(), q, Receipt("done".into())));
        let held = OrphanGuard::new(orphans.clone(), q, Receipt("held".into()));
        orphans.abandon_all();
        drop(held);
        assert_eq!(orphans.take(), [(q, Receipt("held".into()))]);
        assert!(orphans.take().is_empty(), "each orphan is given back once");
    }
}
