//! A sub-orchestration start the child instance refused (the explicit instance ID is already
//! in use by an active execution): the parent is told with a `SubOrchestrationFailed` that
//! names the child, instead of waiting forever for a child that never runs.

use taskhub_core::{
    EventKind, ExecutionId, FailureDetails, InstanceId, Message, MessageId, ParentInstance, Sender,
};
use taskhub_storage::{InstanceRow, OutboundMessage, QueueName, StorageError};

use crate::hub::TaskHub;
use crate::worker::shared::outbound;

/// The `error_type` of the failure the parent receives.
pub(crate) const INSTANCE_IN_USE: &str = "SubOrchestrationInstanceInUse";

/// The parent of a sub-orchestration start sent by that parent, with the child's execution.
fn parent_of(m: &Message) -> Option<(&ParentInstance, &ExecutionId)> {
    let EventKind::ExecutionStarted {
        parent: Some(parent),
        execution_id,
        ..
    } = &m.event
    else {
        return None;
    };
    // A continue-as-new start also carries the parent, but is sent by the instance itself.
    let sent_by_parent = m
        .sender
        .as_ref()
        .is_some_and(|s| s.instance_id == parent.instance_id);
    sent_by_parent.then_some((parent, execution_id))
}

/// The failure notice for a refused start `m` of `child`, if it came from a parent.
/// Its ID is derived from the refused execution, so a re-sent notice is a duplicate.
pub(crate) async fn notice(
    hub: &TaskHub,
    child: &InstanceId,
    row: Option<&InstanceRow>,
    m: &Message,
) -> Result<Option<OutboundMessage>, StorageError> {
    let Some((parent, execution)) = parent_of(m) else {
        return Ok(None);
    };
    let why = match row {
        Some(r) => format!(
            "sub-orchestration instance '{child}' is already in use ({} execution {} of '{}'); \
             it was not started",
            r.status, r.execution_id, r.name
        ),
        None => format!("sub-orchestration instance '{child}' refused the start"),
    };
    let partition = hub.partition_of(&parent.instance_id).await?;
    let message = Message {
        id: MessageId::derived(child, execution, "start-refused"),
        target: parent.instance_id.clone(),
        execution_id: Some(parent.execution_id.clone()),
        sender: Some(Sender {
            instance_id: child.clone(),
            execution_id: execution.clone(),
        }),
        episode: 0,
        enqueued_at: hub.clock().now(),
        target_partition: Some(partition),
        // The answer joins the trace of the parent's turn that asked for the start.
        traceparent: m.traceparent.clone(),
        order: None,
        event: EventKind::SubOrchestrationFailed {
            task_id: parent.task_id,
            failure: FailureDetails::new(INSTANCE_IN_USE, why),
        },
    };
    let queue = QueueName::Control(partition);
    outbound::encode(hub, queue, &message, std::time::Duration::ZERO)
        .await
        .map(Some)
}
