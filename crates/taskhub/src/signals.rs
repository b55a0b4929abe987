//! In-process wake-ups: a message enqueued by this process wakes its poller at once (a delayed
//! one, such as a durable timer, when it becomes visible), and a finished instance wakes the
//! clients waiting for it (no busy polling inside one process).
//!
//! Delayed wake-ups are kept by one task per hub that sleeps on the `Clock` until the earliest
//! one of any queue is due; a queue keeps one entry per distinct due time, at most
//! `MAX_PENDING_PER_QUEUE` (1,024), beyond which a new time merges into a later one.

use std::collections::{BTreeMap, BTreeSet};
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

    /// A waker for the store to call when another process made messages visible
    /// ([`TaskHubStore::watch_queues`](taskhub_storage::TaskHubStore::watch_queues)). It holds
    /// the notifiers weakly: once the hub is gone it does nothing.
    pub(crate) fn remote_waker(&self) -> taskhub_storage::QueueWake {
        let queues = Arc::downgrade(&self.queues);
        Arc::new(move |queue| {
            if let Some(queues) = queues.upgrade() {
                queues.get(queue).notify_one();
            }
        })
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

/// The most distinct wake-up times kept per queue. Past it, a new time is merged into a
/// neighbour (its poller is woken a little late, never not at all), so memory stays bounded
/// however many delayed messages are sent.
const MAX_PENDING_PER_QUEUE: usize = 1024;

/// Pending wake-ups: per queue, the distinct monotonic times at which some delayed message of
/// it becomes visible. Only the earliest of each queue is waited for; when it fires, the
/// queue's next one is the next to wait for (re-arming). Messages due at the same time share
/// one entry.
#[derive(Debug, Default)]
struct DueWakes {
    queues: BTreeMap<QueueName, BTreeSet<Duration>>,
}

impl DueWakes {
    /// Adds a wake-up of `queue` at `at`.
    fn add(&mut self, queue: QueueName, at: Duration) {
        let times = self.queues.entry(queue).or_default();
        if times.len() < MAX_PENDING_PER_QUEUE || times.contains(&at) {
            times.insert(at);
            return;
        }
        // Full: the next later wake-up serves this message too (it wakes a little late).
        if times.range(at..).next().is_some() {
            return;
        }
        // Later than all: the latest moves out to `at`; its messages are visible by then.
        times.pop_last();
        times.insert(at);
    }

    /// The earliest pending wake-up of any queue.
    fn next_due(&self) -> Option<Duration> {
        self.queues
            .values()
            .filter_map(|t| t.first())
            .min()
            .copied()
    }

    /// Removes the wake-ups due by `now` and returns their queues (each once).
    fn take_due(&mut self, now: Duration) -> Vec<QueueName> {
        let mut due = Vec::new();
        self.queues.retain(|queue, times| {
            let before = times.len();
            let later = times.split_off(&(now + Duration::from_nanos(1)));
            *times = later;
            if times.len() < before {
                due.push(*queue);
            }
            !times.is_empty()
        });
        due
    }

    /// Pending wake-ups over all queues.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.queues.values().map(BTreeSet::len).sum()
    }
}

/// Wakes each queue's poller at the monotonic times it was given; ends when the hub is gone.
async fn wake_when_due(
    clock: Arc<dyn Clock>,
    queues: Arc<Notifiers>,
    mut rx: mpsc::UnboundedReceiver<(Duration, QueueName)>,
) {
    let mut wakes = DueWakes::default();
    loop {
        for queue in wakes.take_due(clock.monotonic()) {
            queues.get(queue).notify_one();
        }
        let next = wakes
            .next_due()
            .map(|at| at.saturating_sub(clock.monotonic()));
        tokio::select! {
            received = rx.recv() => match received {
                Some((at, queue)) => wakes.add(queue, at),
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

    #[test]
    fn wake_ups_are_one_per_distinct_time_and_bounded_per_queue() {
        let mut wakes = DueWakes::default();
        let q = QueueName::Control(0);
        // Ten thousand delayed messages due at ten distinct times: ten entries.
        for i in 0..10_000u64 {
            wakes.add(q, Duration::from_secs(1 + i % 10));
        }
        assert_eq!(wakes.len(), 10);
        // Ten thousand distinct times: at most the bound, and the earliest and latest kept.
        let mut wakes = DueWakes::default();
        for i in 0..10_000u64 {
            wakes.add(q, Duration::from_millis(1 + i));
        }
        assert_eq!(wakes.len(), MAX_PENDING_PER_QUEUE);
        assert_eq!(wakes.next_due(), Some(Duration::from_millis(1)));
        let mut woken_at = Vec::new();
        for ms in 1..=10_000u64 {
            if !wakes.take_due(Duration::from_millis(ms)).is_empty() {
                woken_at.push(ms);
            }
        }
        assert_eq!(
            woken_at.last(),
            Some(&10_000),
            "the last message is woken when due"
        );
        assert!(wakes.next_due().is_none());
    }

    #[test]
    fn each_queue_re_arms_with_its_next_wake_up() {
        let mut wakes = DueWakes::default();
        let (a, b) = (QueueName::Control(0), QueueName::WorkItems);
        wakes.add(a, Duration::from_secs(3));
        wakes.add(a, Duration::from_secs(1));
        wakes.add(b, Duration::from_secs(2));
        assert_eq!(wakes.take_due(Duration::from_secs(1)), [a]);
        assert_eq!(wakes.next_due(), Some(Duration::from_secs(2)));
        assert_eq!(wakes.take_due(Duration::from_secs(2)), [b]);
        assert_eq!(wakes.take_due(Duration::from_millis(2_999)), []);
        assert_eq!(wakes.take_due(Duration::from_secs(3)), [a]);
        assert_eq!(wakes.len(), 0);
    }

    #[tokio::test]
    async fn many_delayed_messages_on_one_queue_each_wake_the_poller_when_due() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        let signals = Signals::new(Arc::new(clock.clone()));
        let q = QueueName::Control(3);
        // A thousand messages at each of five due times, sent in reverse order.
        for due in (1..=5u64).rev() {
            for _ in 0..1_000 {
                signals.enqueued_after(q, Duration::from_secs(10 * due));
            }
        }
        tokio::task::yield_now().await;
        for due in 1..=5u64 {
            clock.advance(Duration::from_secs(10) - Duration::from_millis(1));
            assert!(!woken(&signals, q).await, "woken early for {due}");
            clock.advance(Duration::from_millis(1));
            assert!(woken(&signals, q).await, "not woken when {due} was due");
        }
        clock.advance(Duration::from_secs(3600));
        assert!(!woken(&signals, q).await, "woken with nothing due");
    }
}
