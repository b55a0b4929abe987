//! In-process wake-ups: a message enqueued by this process wakes its poller at once (a delayed
//! one, such as a durable timer, when it becomes visible), and a finished instance wakes the
//! clients waiting for it (no busy polling inside one process).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, Notify};

use taskhub_core::{InstanceId, OrchestrationStatus};
use taskhub_storage::{Clock, QueueName, MAX_PARTITIONS};

/// A change of an instance's status, published after the checkpoint that made it committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceChanged {
    /// The instance.
    pub instance_id: InstanceId,
    /// Its new status.
    pub status: OrchestrationStatus,
}

/// The wake-up channels of one task hub in this process.
#[derive(Debug)]
pub(crate) struct Signals {
    queues: Arc<Notifiers>,
    instances: broadcast::Sender<InstanceChanged>,
    clock: Arc<dyn Clock>,
    /// Feeds the task that wakes pollers when delayed messages become visible (started on
    /// the first delayed message).
    due: OnceLock<mpsc::UnboundedSender<(Duration, QueueName)>>,
}

/// One notifier per queue.
#[derive(Debug)]
struct Notifiers {
    control: Vec<Notify>,
    work_items: Notify,
}

impl Notifiers {
    fn get(&self, queue: QueueName) -> &Notify {
        match queue {
            QueueName::Control(p) => self.control.get(p as usize).unwrap_or(&self.work_items),
            QueueName::WorkItems => &self.work_items,
        }
    }
}

impl Signals {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            queues: Arc::new(Notifiers {
                control: (0..MAX_PARTITIONS).map(|_| Notify::new()).collect(),
                work_items: Notify::new(),
            }),
            instances: broadcast::channel(4096).0,
            clock,
            due: OnceLock::new(),
        }
    }

    /// The notifier a poller of `queue` waits on.
    pub(crate) fn queue(&self, queue: QueueName) -> &Notify {
        self.queues.get(queue)
    }

    /// Wakes the poller of `queue` (or stores a permit if it is not waiting).
    pub(crate) fn enqueued(&self, queue: QueueName) {
        self.queue(queue).notify_one();
    }

    /// Wakes the poller of `queue` once a message enqueued with `delay` becomes visible, so a
    /// durable timer fires on time however long the idle poll back-off has grown.
    pub(crate) fn enqueued_after(&self, queue: QueueName, delay: Duration) {
        if delay.is_zero() {
            self.enqueued(queue);
            return;
        }
        let due = self.clock.monotonic() + delay;
        let sender = self.due.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(wake_when_due(self.clock.clone(), self.queues.clone(), rx));
            tx
        });
        let _ = sender.send((due, queue));
    }

    /// Publishes a status change.
    pub(crate) fn instance_changed(&self, change: InstanceChanged) {
        // No receiver is fine: nobody is waiting.
        let _ = self.instances.send(change);
    }

    /// Subscribes to status changes.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<InstanceChanged> {
        self.instances.subscribe()
    }
}

/// Wakes each queue's poller at the monotonic times it was given; ends when the hub is gone.
async fn wake_when_due(
    clock: Arc<dyn Clock>,
    queues: Arc<Notifiers>,
    mut rx: mpsc::UnboundedReceiver<(Duration, QueueName)>,
) {
    let mut heap: BinaryHeap<Reverse<(Duration, QueueKey)>> = BinaryHeap::new();
    loop {
        let now = clock.monotonic();
        while heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            if let Some(Reverse((_, key))) = heap.pop() {
                queues.get(key.0).notify_one();
            }
        }
        let next = heap.peek().map(|Reverse((at, _))| at.saturating_sub(now));
        tokio::select! {
            received = rx.recv() => match received {
                Some((at, queue)) => heap.push(Reverse((at, QueueKey(queue)))),
                None => return,
            },
            () = async {
                match next {
                    Some(wait) => clock.sleep(wait).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
}

/// A queue name with an order, for the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QueueKey(QueueName);

impl Ord for QueueKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let rank = |q: QueueName| match q {
            QueueName::Control(p) => u64::from(p),
            QueueName::WorkItems => u64::MAX,
        };
        rank(self.0).cmp(&rank(other.0))
    }
}

impl PartialOrd for QueueKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;
    use taskhub_storage::ManualClock;

    /// Paused tokio time: the timeout runs out only once no task is ready to run, so "not
    /// woken" means the signal task had processed the clock advance and did not notify.
    async fn woken(signals: &Signals, queue: QueueName) -> bool {
        tokio::time::timeout(Duration::from_millis(200), signals.queue(queue).notified())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_message_wakes_its_poller_when_it_becomes_visible() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        let signals = Signals::new(Arc::new(clock.clone()));
        let q = QueueName::Control(2);
        signals.enqueued_after(q, Duration::from_secs(10));
        signals.enqueued_after(QueueName::Control(1), Duration::from_secs(60));
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(9));
        assert!(!woken(&signals, q).await, "woken a second early");
        clock.advance(Duration::from_secs(1));
        assert!(woken(&signals, q).await, "not woken when due");
        assert!(!woken(&signals, QueueName::Control(1)).await);
        clock.advance(Duration::from_secs(50));
        assert!(woken(&signals, QueueName::Control(1)).await);
    }
}
