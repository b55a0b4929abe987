//! The worker's life: the stop signal, the tasks it spawned, the work items it is executing
//! (so a timed-out shutdown can give them back), the control deliveries dropped unfinished,
//! and its counters.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use taskhub_storage::{QueueName, Receipt};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::orphans::Orphans;
use super::WorkerStats;

/// What every step may ask of the worker as a whole: is it stopping, count this, run that.
pub(crate) struct Lifecycle {
    /// True once the worker stops.
    pub stop: watch::Receiver<bool>,
    /// Sends the stop (the handle's shutdown, or a halt).
    stopper: Arc<watch::Sender<bool>>,
    /// Why the worker stopped taking work by itself (the hub's schema moved past its build).
    halted: Mutex<Option<String>>,
    /// Tasks the worker spawned (sessions, activity runs, renewers).
    tasks: Mutex<JoinSet<()>>,
    /// Control deliveries dropped unfinished while the worker is abandoned.
    pub orphans: Arc<Orphans>,
    stats: Mutex<WorkerStats>,
    /// Work items being executed, by flight number, so a timed-out shutdown can abandon them.
    in_flight: Mutex<HashMap<u64, (QueueName, Receipt)>>,
    next_flight: AtomicU64,
}

impl Lifecycle {
    /// A worker that runs until `stopper` sends true.
    pub(crate) fn new(stopper: Arc<watch::Sender<bool>>) -> Self {
        Self {
            stop: stopper.subscribe(),
            stopper,
            halted: Mutex::new(None),
            tasks: Mutex::new(JoinSet::new()),
            orphans: Arc::new(Orphans::default()),
            stats: Mutex::new(WorkerStats::default()),
            in_flight: Mutex::new(HashMap::new()),
            next_flight: AtomicU64::new(0),
        }
    }

    /// True once the worker stops.
    pub(crate) fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Stops the worker taking work because of `error` (the hub was migrated by a newer
    /// build): logged once, kept for [`halted`](Self::halted), and the stop sent. Deliveries
    /// given back from now on are not counted as failures.
    pub(crate) fn halt(&self, error: &taskhub_storage::StorageError) {
        let mut halted = self.halted.lock().unwrap_or_else(PoisonError::into_inner);
        if halted.is_none() {
            tracing::error!(error = %error, "the worker stops taking work");
            *halted = Some(error.to_string());
            drop(halted);
            self.stopper.send_replace(true);
        }
    }

    /// Why the worker halted, if it did.
    pub(crate) fn halted(&self) -> Option<String> {
        self.halted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Updates the counters.
    pub(crate) fn stat(&self, f: impl FnOnce(&mut WorkerStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> WorkerStats {
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs `fut` as one of the worker's tasks (waited for at shutdown, aborted with the
    /// worker).
    pub(crate) fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        // Reap finished tasks so the set does not grow with every task ever spawned.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(fut);
    }

    /// Takes the spawned tasks out, leaving an empty set.
    pub(crate) fn take_tasks(&self) -> JoinSet<()> {
        std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Notes a work item being executed under `receipt`; returns its flight number.
    pub(crate) fn take_off(&self, queue: QueueName, receipt: Receipt) -> u64 {
        let flight = self.next_flight.fetch_add(1, Ordering::Relaxed);
        self.renewed(flight, queue, receipt);
        flight
    }

    /// The work item of `flight` is held under a new `receipt` now.
    pub(crate) fn renewed(&self, flight: u64, queue: QueueName, receipt: Receipt) {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(flight, (queue, receipt));
    }

    /// The work item of `flight` is no longer this worker's to give back.
    pub(crate) fn landed(&self, flight: u64) {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&flight);
    }

    /// Takes every work item still being executed (to give them back).
    pub(crate) fn take_in_flight(&self) -> Vec<(QueueName, Receipt)> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, v)| v)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(s: &str) -> Receipt {
        Receipt(s.to_owned())
    }

    #[test]
    fn work_items_in_flight_are_given_back_under_their_latest_receipt() {
        let life = Lifecycle::new(Arc::new(watch::channel(false).0));
        let a = life.take_off(QueueName::WorkItems, receipt("a1"));
        let b = life.take_off(QueueName::WorkItems, receipt("b1"));
        assert_ne!(a, b);
        life.renewed(a, QueueName::WorkItems, receipt("a2"));
        life.landed(b);
        assert_eq!(
            life.take_in_flight(),
            vec![(QueueName::WorkItems, receipt("a2"))]
        );
        assert!(life.take_in_flight().is_empty());
    }

    #[test]
    fn stopping_follows_the_stop_signal_and_counters_add_up() {
        let tx = Arc::new(watch::channel(false).0);
        let life = Lifecycle::new(tx.clone());
        assert!(!life.stopping());
        life.stat(|s| s.turns += 2);
        life.stat(|s| s.turns += 1);
        assert_eq!(life.stats().turns, 3);
        tx.send(true).unwrap_or_default();
        assert!(life.stopping());
    }

    #[test]
    fn a_halt_stops_the_worker_once_and_keeps_the_first_reason() {
        let life = Lifecycle::new(Arc::new(watch::channel(false).0));
        let newer = taskhub_storage::StorageError::NewerSchema {
            what: "hub".into(),
            found: 8,
            supported: 7,
        };
        life.halt(&newer);
        life.halt(&taskhub_storage::StorageError::Backend("later".into()));
        assert!(life.stopping());
        let why = life.halted().unwrap_or_default();
        assert!(
            why.contains("newer build") && !why.contains("later"),
            "{why}"
        );
    }
}
