//! Reaching past the runtime into a store: a raw message on a queue, one partition's row.

use std::time::Duration;

use taskhub_storage::{NewQueueMessage, PartitionRow, PartitionStore, QueueName, QueueStore};

/// Puts one message whose body is `body` on `queue`, visible at once.
pub async fn enqueue_now<S: QueueStore + ?Sized>(store: &S, queue: QueueName, body: String) {
    let message = NewQueueMessage {
        body,
        delay: Duration::ZERO,
    };
    store.enqueue(queue, vec![message]).await.unwrap();
}

/// The row of partition `partition`, which exists.
pub async fn partition_row<S: PartitionStore + ?Sized>(store: &S, partition: u32) -> PartitionRow {
    store
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.partition == partition)
        .unwrap()
}
