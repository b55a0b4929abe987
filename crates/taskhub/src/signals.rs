//! In-process wake-ups: a message enqueued by this process wakes its poller at once, and a
//! finished instance wakes the clients waiting for it (no busy polling inside one process).

use tokio::sync::{broadcast, Notify};

use taskhub_core::{InstanceId, OrchestrationStatus};
use taskhub_storage::{QueueName, MAX_PARTITIONS};

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
    control: Vec<Notify>,
    work_items: Notify,
    instances: broadcast::Sender<InstanceChanged>,
}

impl Signals {
    pub(crate) fn new() -> Self {
        Self {
            control: (0..MAX_PARTITIONS).map(|_| Notify::new()).collect(),
            work_items: Notify::new(),
            instances: broadcast::channel(4096).0,
        }
    }

    /// The notifier a poller of `queue` waits on.
    pub(crate) fn queue(&self, queue: QueueName) -> &Notify {
        match queue {
            QueueName::Control(p) => self.control.get(p as usize).unwrap_or(&self.work_items),
            QueueName::WorkItems => &self.work_items,
        }
    }

    /// Wakes the poller of `queue` (or stores a permit if it is not waiting).
    pub(crate) fn enqueued(&self, queue: QueueName) {
        self.queue(queue).notify_one();
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
