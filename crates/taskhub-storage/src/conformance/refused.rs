//! What the cases of a refused checkpoint share ([`checkpoint`](super::checkpoint) and
//! [`rewind`](super::rewind)): a message dequeued for the checkpoint to consume
//! ([`consumable`]), the check that nothing changed ([`Unchanged`]), and a partition whose
//! lease "worker-a" holds, for the checkpoints refused by their fence ([`FencedHub`]).

use crate::checkpoint::{CheckpointRequest, LeaseFence};
use crate::error::StorageError;
use crate::history::HistorySnapshot;
use crate::instances::InstanceRow;
use crate::queue::{QueueName, Receipt};
use crate::store::TaskHubStore;

use super::fixtures::{
    commit, dequeue, enqueue, hub_with_lease, iid, instance, load, queue_length,
};

/// Enqueues `body` on `queue` and dequeues it: the receipt a checkpoint consumes.
pub(crate) async fn consumable(s: &dyn TaskHubStore, queue: QueueName, body: &str) -> Receipt {
    enqueue(s, queue, &[body]).await;
    dequeue(s, queue, 1).await.remove(0).receipt
}

/// What a refused checkpoint MUST leave as it was: an instance's history and row, and the
/// length of some queues.
pub(crate) struct Unchanged {
    id: String,
    history: HistorySnapshot,
    row: Option<InstanceRow>,
    queues: Vec<(QueueName, u64)>,
}

impl Unchanged {
    /// Notes the history and row of instance `id` and the length of each of `queues`.
    pub(crate) async fn note(s: &dyn TaskHubStore, id: &str, queues: &[QueueName]) -> Self {
        let mut lengths = Vec::new();
        for queue in queues {
            lengths.push((*queue, queue_length(s, *queue).await));
        }
        Self {
            id: id.to_owned(),
            history: load(s, id).await,
            row: instance(s, id).await,
            queues: lengths,
        }
    }

    /// Asserts that all is still as noted, after the refused `what`.
    pub(crate) async fn assert_kept(&self, s: &dyn TaskHubStore, what: &str) {
        let id = &self.id;
        assert_eq!(load(s, id).await, self.history, "{what}: history unchanged");
        assert_eq!(
            instance(s, id).await,
            self.row,
            "{what}: instance row unchanged"
        );
        for (queue, length) in &self.queues {
            assert_eq!(
                queue_length(s, *queue).await,
                *length,
                "{what}: nothing sent to or deleted from {queue}"
            );
        }
    }
}

/// A hub of 4 partitions, the lease of instance `id`'s partition taken by "worker-a", and
/// one message of that partition's control queue dequeued.
pub(crate) struct FencedHub {
    /// The instance.
    pub id: &'static str,
    /// Its partition.
    pub partition: u32,
    /// The epoch "worker-a" took the lease under.
    pub old_epoch: u64,
    /// The partition's control queue.
    pub control: QueueName,
    /// The receipt of the dequeued message.
    pub consumed: Receipt,
}

impl FencedHub {
    /// Creates the hub, takes the lease, enqueues `body` on the control queue and dequeues it.
    pub(crate) async fn set_up(s: &dyn TaskHubStore, id: &'static str, body: &str) -> Self {
        let partition = iid(id).partition(4);
        let old_epoch = hub_with_lease(s, 4, partition, "worker-a").await;
        let control = QueueName::Control(partition);
        let consumed = consumable(s, control, body).await;
        Self {
            id,
            partition,
            old_epoch,
            control,
            consumed,
        }
    }

    /// Commits `request` fenced by the partition's lease under `epoch`.
    pub(crate) async fn commit_under(
        &self,
        s: &dyn TaskHubStore,
        mut request: CheckpointRequest,
        epoch: u64,
    ) {
        request.fence = Some(self.fence(epoch));
        commit(s, request).await;
    }

    fn fence(&self, epoch: u64) -> LeaseFence {
        LeaseFence {
            partition: self.partition,
            epoch,
        }
    }

    /// Sends `stale` (a `what`, e.g. "checkpoint") under the old epoch and one past `current`,
    /// the epoch in force: each MUST fail with `Fenced` and leave the history, the instance
    /// row, the queues `unsent` (empty) and the consumed message as they were.
    pub(crate) async fn assert_refused(
        &self,
        s: &dyn TaskHubStore,
        stale: &CheckpointRequest,
        current: u64,
        what: &str,
        unsent: &[QueueName],
    ) {
        let p = self.partition;
        let queues: Vec<QueueName> = unsent.iter().copied().chain([self.control]).collect();
        let unchanged = Unchanged::note(s, self.id, &queues).await;
        for epoch in [self.old_epoch, current + 1] {
            let mut stale = stale.clone();
            stale.fence = Some(self.fence(epoch));
            let result = s.checkpoint(stale).await;
            assert!(
                matches!(
                    result,
                    Err(StorageError::Fenced { partition, attempted, current: now })
                        if partition == p && attempted == epoch && now == current
                ),
                "{what} under epoch {epoch} (current {current}): expected Fenced, got {result:?}"
            );
            unchanged.assert_kept(s, what).await;
        }
    }
}
