//! Reporting an activity's result: to its orchestration's session in process when this
//! worker holds the partition (see [`local`]), else committed to the
//! orchestration's control queue with the work item's delete (see
//! [`result_commit`]).

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{EventKind, ExecutionId, Message, MessageId, Sender};
use taskhub_storage::QueueName;
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

use super::admit::{Admitted, Task};
use super::execute::Executed;
use super::local::{self, LocalResult};
use super::result_commit::{self, WorkItemHold};
use crate::telemetry::TraceContext;
use crate::worker::shared::outbound;
use crate::worker::shared::run_ledger::RunMark;
use crate::worker::shared::Shared;

/// Reports an executed work item's result and lands its flight.
pub(super) async fn report(
    shared: &Arc<Shared>,
    admitted: Admitted,
    executed: Executed,
    permit: OwnedSemaphorePermit,
) {
    let Admitted {
        m,
        message,
        task,
        execution,
        mark,
        flight,
    } = admitted;
    let Executed {
        outcome,
        mut hold,
        partition_hint: hint,
        trace,
    } = executed;
    let event = match outcome {
        Ok(result) => EventKind::TaskCompleted {
            task_id: task.task_id,
            result,
        },
        Err(failure) => EventKind::TaskFailed {
            task_id: task.task_id,
            failure,
        },
    };
    // The instance may have moved off a partition that is being removed.
    let partition = shared.route(&message.target, hint).await.unwrap_or(hint);
    let now = shared.hub.clock().now();
    let reply = reply(now, &message, &task, execution, event, partition, trace);
    // This worker holds the orchestration's partition: the result goes to its session in
    // process, and the checkpoint that records it deletes the work item.
    let local = LocalResult {
        reply,
        partition,
        work_item: m,
        slot: permit,
        mark,
    };
    let (reply, _permit, mark) = match local::try_deliver(shared, local, &hold) {
        Ok(()) => return,
        Err(local) => (local.reply, local.slot, local.mark),
    };
    commit(shared, &reply, partition, &mut hold, &mark).await;
    shared.lifecycle.landed(flight);
}

/// The result message of `task`, addressed to its orchestration on `partition`, sent at `now`.
fn reply(
    now: taskhub_core::Timestamp,
    message: &Message,
    task: &Task,
    execution: ExecutionId,
    event: EventKind,
    partition: u32,
    trace: TraceContext,
) -> Message {
    Message {
        id: MessageId::derived(
            &message.target,
            &execution,
            &outbound::attempt_purpose("result", task.task_id, task.attempt),
        ),
        target: message.target.clone(),
        execution_id: Some(execution.clone()),
        sender: Some(Sender {
            instance_id: message.target.clone(),
            execution_id: execution,
        }),
        episode: message.episode,
        enqueued_at: now,
        target_partition: Some(partition),
        traceparent: Some(trace.traceparent()),
        order: None,
        event,
    }
}

/// Sends the result to the orchestration's control queue in the checkpoint that deletes the
/// work item; a result not committed lets the work item run again.
async fn commit(
    shared: &Shared,
    reply: &Message,
    partition: u32,
    hold: &mut WorkItemHold,
    mark: &RunMark,
) {
    let reply_queue = QueueName::Control(partition);
    let outbound = match outbound::encode(&shared.hub, reply_queue, reply, Duration::ZERO).await {
        Ok(o) => o,
        Err(e) => {
            warn!(error = %e, "could not encode an activity result; the work item will run again");
            return;
        }
    };
    match result_commit::commit(
        &shared.hub,
        &shared.lifecycle,
        &reply.target,
        outbound,
        hold,
    )
    .await
    {
        Ok(_) => {
            mark.recorded();
            shared.lifecycle.stat(|s| s.activities += 1);
            shared.hub.signals().enqueued(reply_queue);
        }
        Err(e) => {
            warn!(error = %e, "could not report an activity result; the work item will run again")
        }
    }
}
