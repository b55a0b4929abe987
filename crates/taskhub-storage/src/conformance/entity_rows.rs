//! Cases for what entities rely on: a checkpoint with no history whose instance row is the
//! commit (conditional on its ETag, fenced, deleting what it consumed), and the all-or-nothing
//! promise of a backend that reports
//! [`atomic_checkpoints`](crate::TaskHubStore::atomic_checkpoints).

use taskhub_core::OrchestrationStatus::Running;

use super::fixtures::{
    dequeue, enqueue, hub_with_lease, iid, instance, json, outbound, queue_length, row, take_lease,
    START,
};
use crate::checkpoint::{CheckpointRequest, LeaseFence};
use crate::clock::ManualClock;
use crate::error::StorageError;
use crate::history::ETag;
use crate::instances::{Expect, InstanceRow};
use crate::queue::QueueName;
use crate::store::TaskHubStore;

/// An entity's row: state in `custom_status`, its record in `input`.
fn entity_row(id: &str, state: &str, record: &str) -> InstanceRow {
    InstanceRow {
        custom_status: Some(json(state)),
        input: json(record),
        ..row(id, "Counter", Running, START)
    }
}

/// A checkpoint without history whose instance row is written under `Expect::ETag` MUST fail
/// with `Conflict` when the row changed, and then MUST NOT delete its consumed messages (the
/// row is written before they are deleted, or in one transaction with them); with the current
/// ETag it writes the row and deletes them. A stale fence MUST fail with `Fenced` and change
/// nothing.
pub async fn checkpoint_without_history_commits_by_the_row_condition(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "@Counter@a";
    let p = iid(id).partition(4);
    let epoch = hub_with_lease(s, 4, p, "worker-a").await;
    let control = QueueName::Control(p);
    let fence = Some(LeaseFence {
        partition: p,
        epoch,
    });
    let first = s
        .put_instance(&entity_row(id, "1", "{}"), Expect::Absent)
        .await
        .expect("put_instance");
    enqueue(s, control, &["op-1"]).await;
    let consumed = dequeue(s, control, 1).await;

    let request = |expect: Expect, state: &str| CheckpointRequest {
        instance_id: iid(id),
        fence,
        history: None,
        instance: Some((entity_row(id, state, "{}"), expect)),
        outbound: Vec::new(),
        consumed: vec![(control, consumed[0].receipt.clone())],
    };
    let stale = s
        .checkpoint(request(Expect::ETag(ETag("not-the-etag".into())), "2"))
        .await;
    assert!(
        matches!(stale, Err(StorageError::Conflict { .. })),
        "a stale row ETag conflicts: {stale:?}"
    );
    let now = instance(s, id).await.expect("row");
    assert_eq!(now.custom_status, Some(json("1")), "row unchanged");
    assert_eq!(queue_length(s, control).await, 1, "consumed message kept");

    let committed = s
        .checkpoint(request(Expect::ETag(first.clone()), "2"))
        .await
        .expect("checkpoint with the current ETag");
    let now = instance(s, id).await.expect("row");
    assert_eq!(now.custom_status, Some(json("2")), "row written");
    assert_eq!(committed.instance_etag, now.etag, "its new ETag reported");
    assert_eq!(
        queue_length(s, control).await,
        0,
        "consumed message deleted"
    );

    // Another owner took the partition: the old fence commits nothing.
    take_lease(s, p, "worker-b").await;
    let mut fenced = request(Expect::Any, "3");
    fenced.consumed.clear();
    let result = s.checkpoint(fenced).await;
    assert!(
        matches!(result, Err(StorageError::Fenced { .. })),
        "a stale fence is rejected: {result:?}"
    );
    let now = instance(s, id).await.expect("row");
    assert_eq!(now.custom_status, Some(json("2")), "row unchanged");
}

/// A backend that reports `atomic_checkpoints` MUST apply a checkpoint all or nothing: when
/// its instance-row condition fails, no outbound message is sent and no consumed message is
/// deleted. (Backends that do not report it are not held to this; the case checks nothing
/// for them.)
pub async fn atomic_checkpoint_with_a_failed_row_condition_changes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    if !s.atomic_checkpoints() {
        return;
    }
    let id = "@Counter@b";
    let p = iid(id).partition(4);
    let epoch = hub_with_lease(s, 4, p, "worker-a").await;
    let control = QueueName::Control(p);
    let other = QueueName::Control((p + 1) % 4);
    s.put_instance(&entity_row(id, "1", "{}"), Expect::Absent)
        .await
        .expect("put_instance");
    enqueue(s, control, &["op-1"]).await;
    let consumed = dequeue(s, control, 1).await;
    let result = s
        .checkpoint(CheckpointRequest {
            instance_id: iid(id),
            fence: Some(LeaseFence {
                partition: p,
                epoch,
            }),
            history: None,
            instance: Some((
                entity_row(id, "2", "{}"),
                Expect::ETag(ETag("not-the-etag".into())),
            )),
            outbound: vec![outbound(other, "response")],
            consumed: vec![(control, consumed[0].receipt.clone())],
        })
        .await;
    assert!(
        matches!(result, Err(StorageError::Conflict { .. })),
        "a stale row ETag conflicts: {result:?}"
    );
    assert_eq!(queue_length(s, other).await, 0, "nothing sent");
    assert_eq!(queue_length(s, control).await, 1, "consumed message kept");
}
