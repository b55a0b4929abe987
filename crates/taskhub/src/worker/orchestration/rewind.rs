//! Rewinding a failed instance (what is dropped and kept: `taskhub_core::engine::rewind`).
//!
//! A batch that carries a rewind request (an `ExecutionRewound` message, from a client or a
//! parent) for a Failed instance loads it rewound: [`prepare`] reads its history afresh and
//! replays the kept part. The turn then records `ExecutionRewound` and what the code schedules
//! again, and its checkpoint *replaces* the history with the kept events and the turn's
//! ([`replace_history`]): one checkpoint, fenced and conditional on the loaded history's ETag
//! like every other, so a crash leaves either the failed history or the rewound one. The same
//! checkpoint sets the children the kept history waits for going again ([`children`]).

use std::time::Duration;

use taskhub_core::{
    EventKind, FailureDetails, HistoryEvent, InstanceId, OpenChild, OrchestrationSession,
    OrchestrationStatus, Payload,
};
use taskhub_storage::{InstanceRow, OutboundMessage, QueueName, StorageError};
use tracing::{info, warn};

use super::cached::{Cached, Live, Rewinding};
use super::outbox::{self, Origin};
use super::plan::TurnWrites;
use super::redeliver::abandon;
use crate::hub::TaskHub;
use crate::telemetry;
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::outbound;
use crate::worker::shared::Shared;

/// The first rewind request in `due`, if any.
fn request(due: &[Delivery]) -> Option<&taskhub_core::Message> {
    due.iter()
        .map(|d| &d.message)
        .find(|m| matches!(m.event, EventKind::ExecutionRewound { .. }))
}

/// The reason a rewind request gives.
fn reason_of(m: &taskhub_core::Message) -> Option<String> {
    match &m.event {
        EventKind::ExecutionRewound { reason, .. } => reason.clone(),
        _ => None,
    }
}

/// Is `row` the Running row a rewind request wrote (the client turns the Failed row Running as
/// it sends the request)? Then it is ahead of the failed history, not behind it: a loader must
/// not repair it back to Failed (the rewind's turn writes it). On a store whose checkpoints are
/// transactions (`atomic`) it always is: no checkpoint leaves a row behind its history there.
/// On one that commits in steps it is when the request is in `due`, or when the row was
/// written well after the failure (a message that comes before the request loads the instance
/// too); a row a torn checkpoint left Running was written before.
pub(super) fn row_is_the_request(
    session: &OrchestrationSession,
    row: Option<&InstanceRow>,
    events: &[HistoryEvent],
    due: &[Delivery],
    atomic: bool,
) -> bool {
    let Some(r) = row.filter(|r| {
        session.status() == OrchestrationStatus::Failed
            && r.status == OrchestrationStatus::Running
            && r.execution_id == session.execution_id()
            && r.failure.is_none()
    }) else {
        return false;
    };
    if atomic {
        return true;
    }
    let failed_at = events
        .iter()
        .rev()
        .find(|e| matches!(e.event, EventKind::ExecutionFailed { .. }))
        .map(|e| e.timestamp);
    // A second's margin: a torn row written by another worker whose clock runs ahead is
    // still repaired (a rewind comes long after the failure it forgets).
    request(due).is_some()
        || failed_at.is_some_and(|at| r.updated_at > at.saturating_add(Duration::from_secs(1)))
}

/// If `due` asks to rewind a Failed instance, loads it rewound into `cached`. False: it could
/// not be read now, and `due` went back to its queue. A request for an instance that is not
/// Failed is left to the turn, which discards it naming the status.
pub(super) async fn prepare(
    shared: &Shared,
    instance: &InstanceId,
    cached: &mut Cached,
    due: &[Delivery],
) -> bool {
    let Some(m) = request(due) else {
        return true;
    };
    // Only a Failed execution, and only the one the request names (a parent's request for
    // an earlier execution of its child that failed too does not rewind a later one).
    let failed = cached.session.as_ref().is_some_and(|l| {
        l.session.status() == OrchestrationStatus::Failed
            && m.execution_id
                .as_ref()
                .is_none_or(|e| *e == l.session.execution_id())
    });
    if !failed {
        return true;
    }
    let reason = reason_of(m);
    let store = shared.hub.store();
    let (snapshot, row) = match (
        store.load_history(instance).await,
        store.get_instance(instance).await,
    ) {
        (Ok(Some(snapshot)), Ok(row)) => (snapshot, row),
        (Ok(None), _) => return true,
        (Err(e), _) | (_, Err(e)) => {
            warn!(%instance, error = %e, "could not read the instance to rewind it; will retry");
            cached.session = None;
            abandon(shared.returns(), due, Duration::from_secs(1)).await;
            return false;
        }
    };
    // A request applied before (redelivered after a torn checkpoint, re-sent by a parent's
    // outbox or a client's retry) does not rewind a later failure: the turn discards it.
    let applied = snapshot.events.iter().any(|e| {
        matches!(e.event, EventKind::ExecutionRewound { .. })
            && e.message_id.as_ref() == Some(&m.id)
    });
    if applied {
        return true;
    }
    match OrchestrationSession::load_rewound(
        shared.registry.clone(),
        instance.clone(),
        &snapshot.events,
        shared.executor.is_some(),
    ) {
        Ok((session, plan)) => {
            let (name, execution) = (session.name(), session.execution_id());
            telemetry::spans::rewind(&telemetry::spans::RewindSpan {
                name: &name,
                instance,
                execution: &execution,
                reason: reason.as_deref(),
                rewound_tasks: &plan.rewound_tasks,
                reopened: plan.reopened.len(),
                children: plan.children.len(),
            });
            info!(%instance, rewound_tasks = ?plan.rewound_tasks, reopened = plan.reopened.len(), children = plan.children.len(), "rewinding");
            let mut live = Live::new(session, Some(snapshot.etag));
            live.rewinding = Some(Rewinding {
                kept: plan.kept,
                children: plan.children,
                reason,
            });
            cached.session = Some(live);
            cached.row = row;
        }
        // Not failed after all (the cache was behind): the turn discards the request.
        Err(e) => info!(%instance, error = %e, "not rewinding"),
    }
    true
}

/// The turn's history write when it rewinds: the kept history followed by the turn's events,
/// replacing the stored history (`new_execution`: same execution, new events).
pub(super) fn replace_history(writes: &mut TurnWrites, rewinding: &Rewinding) {
    if let Some(history) = writes.history.as_mut() {
        let mut events = rewinding.kept.clone();
        events.append(&mut history.events);
        history.events = events;
        history.new_execution = true;
    }
}

/// The messages that set the kept history's children going again, by each child's row:
/// a Failed child is rewound (same reason), a missing (purged) one started again from its
/// recorded input, a Completed one's result sent to the parent again (the first one came while
/// the parent was failed and was discarded), a Terminated one's end too (a user's terminate
/// stands); a child still active reports when it ends.
pub(super) async fn children(
    shared: &Shared,
    origin: &Origin<'_>,
    rewinding: &Rewinding,
) -> Result<Vec<OutboundMessage>, StorageError> {
    let mut out = Vec::new();
    for child in &rewinding.children {
        let row = shared.hub.store().get_instance(&child.instance_id).await?;
        let Some(row) = row else {
            let start = taskhub_core::Action::StartSubOrchestration {
                task_id: child.task_id,
                name: child.name.clone(),
                version: child.version.clone(),
                instance_id: child.instance_id.clone(),
                input: child.input.clone(),
                attempt: 1,
                tags: child.tags.clone(),
                traceparent: None,
            };
            out.extend(outbox::build(shared, origin, &[start]).await?);
            continue;
        };
        match row.status {
            OrchestrationStatus::Failed => {
                out.push(rewind_child(&shared.hub, origin, rewinding, &row).await?)
            }
            OrchestrationStatus::Completed => {
                let result = row.output.clone().unwrap_or_else(Payload::null);
                let event = EventKind::SubOrchestrationCompleted {
                    task_id: child.task_id,
                    result,
                };
                out.push(answer(&shared.hub, origin, child, event).await?);
            }
            OrchestrationStatus::Terminated => {
                let reason = row
                    .output
                    .as_ref()
                    .and_then(|o| o.parse::<String>("termination reason").ok())
                    .unwrap_or_default();
                let failure = FailureDetails::new(
                    "Terminated",
                    format!("sub-orchestration was terminated: {reason}"),
                );
                let event = EventKind::SubOrchestrationFailed {
                    task_id: child.task_id,
                    failure,
                };
                out.push(answer(&shared.hub, origin, child, event).await?);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// A rewind request to a failed child, from its parent.
async fn rewind_child(
    hub: &TaskHub,
    origin: &Origin<'_>,
    rewinding: &Rewinding,
    row: &InstanceRow,
) -> Result<OutboundMessage, StorageError> {
    let mut m = origin.message(
        &format!("rewind-child:{}@{}", row.instance_id, origin.rewinds),
        row.instance_id.clone(),
        Some(row.execution_id.clone()),
        EventKind::ExecutionRewound {
            reason: rewinding.reason.clone(),
            rewound_tasks: Vec::new(),
        },
    );
    m.target_partition = Some(row.partition);
    at_once(hub, row.partition, &m).await
}

/// A child's result sent to this (the parent) instance again.
async fn answer(
    hub: &TaskHub,
    origin: &Origin<'_>,
    child: &OpenChild,
    event: EventKind,
) -> Result<OutboundMessage, StorageError> {
    let m = origin.message(
        &format!("rewind-answer:{}@{}", child.task_id, origin.rewinds),
        origin.instance.clone(),
        Some(origin.execution.clone()),
        event,
    );
    at_once(hub, origin.partition, &m).await
}

/// `m` encoded for the control queue of `partition`, visible at once.
async fn at_once(
    hub: &TaskHub,
    partition: u32,
    m: &taskhub_core::Message,
) -> Result<OutboundMessage, StorageError> {
    outbound::encode(hub, QueueName::Control(partition), m, Duration::ZERO).await
}
