//! History events: Taskhub's `HistoryEvent` ↔ the protocol's `HistoryEvent`.
//!
//! The protocol's `eventId` is the task ID of an event that schedules something
//! (`TaskScheduled`, `SubOrchestrationCreated`, `TimerCreated`, `EventSent`) and −1 otherwise;
//! results name the task in `taskScheduledId` / `timerId`. Taskhub ends an execution with one
//! event (`ExecutionCompleted`, `ExecutionFailed`, `ExecutionTerminated`, `ContinuedAsNew`);
//! the first two go out as `executionCompleted` with the status, the others as
//! `executionTerminated` and `continueAsNew`. What Taskhub does not keep (a continue-as-new's
//! carried events, a task's attempt number) is not sent, and the protocol's kinds Taskhub has no
//! equivalent for (generic, history state, the entity kinds) are refused on the way in.
//! `ExecutionRewound` is `executionRewound` with its reason (the task IDs it lists have no
//! field in the protocol; they are not sent and come back empty).

use taskhub::{
    EventKind, ExecutionId, FailureDetails, HistoryEvent, InstanceId, ParentInstance, Payload,
};

use super::{
    failure_from_proto, failure_to_proto, optional_timestamp_from_proto, payload_from_proto,
    payload_to_proto, timestamp_from_proto, timestamp_to_proto, ConvertError,
};
use crate::proto::{self, history_event::EventType as E, OrchestrationStatus as S};

/// The `eventId` of an event that names no task.
const NO_TASK: i32 = -1;

/// A Taskhub history event of `instance` as the protocol's.
#[must_use]
pub fn event_to_proto(e: &HistoryEvent, instance: &InstanceId) -> proto::HistoryEvent {
    let (event_id, mut kind) = kind_to_proto(&e.event, instance);
    // The trace context the SDK gave the work it started goes back with the history.
    if let Some(traceparent) = &e.trace {
        let context = || proto::TraceContext {
            trace_parent: traceparent.clone(),
            ..proto::TraceContext::default()
        };
        match &mut kind {
            E::TaskScheduled(t) => t.parent_trace_context = Some(context()),
            E::SubOrchestrationInstanceCreated(s) => s.parent_trace_context = Some(context()),
            _ => {}
        }
    }
    proto::HistoryEvent {
        event_id,
        timestamp: Some(timestamp_to_proto(e.timestamp)),
        event_type: Some(kind),
    }
}

fn task(id: u64) -> i32 {
    i32::try_from(id).unwrap_or(i32::MAX)
}

fn input(p: &Payload) -> Option<String> {
    payload_to_proto(p)
}

/// A reason (plain text in Taskhub) as the JSON text the SDKs send for it.
fn reason_json(reason: &str) -> Option<String> {
    Payload::to_payload(reason, "reason")
        .ok()
        .map(|p| p.as_str().to_owned())
}

fn kind_to_proto(k: &EventKind, instance: &InstanceId) -> (i32, E) {
    match k {
        EventKind::ExecutionStarted {
            name,
            version,
            input: i,
            execution_id,
            parent,
            scheduled_start,
            tags,
            ..
        } => (
            NO_TASK,
            E::ExecutionStarted(proto::ExecutionStartedEvent {
                name: name.clone(),
                version: version.clone(),
                input: input(i),
                orchestration_instance: Some(proto::OrchestrationInstance {
                    instance_id: instance.to_string(),
                    execution_id: Some(execution_id.to_string()),
                }),
                parent_instance: parent.as_ref().map(|p| proto::ParentInstanceInfo {
                    task_scheduled_id: task(p.task_id),
                    name: p.name.as_deref().map(str::to_owned),
                    version: None,
                    orchestration_instance: Some(proto::OrchestrationInstance {
                        instance_id: p.instance_id.to_string(),
                        execution_id: Some(p.execution_id.to_string()),
                    }),
                }),
                scheduled_start_timestamp: scheduled_start.map(timestamp_to_proto),
                tags: tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                ..proto::ExecutionStartedEvent::default()
            }),
        ),
        EventKind::ExecutionCompleted { result } => (
            NO_TASK,
            E::ExecutionCompleted(proto::ExecutionCompletedEvent {
                orchestration_status: S::Completed as i32,
                result: input(result),
                failure_details: None,
            }),
        ),
        EventKind::ExecutionFailed { failure } => (
            NO_TASK,
            E::ExecutionCompleted(proto::ExecutionCompletedEvent {
                orchestration_status: S::Failed as i32,
                result: None,
                failure_details: Some(failure_to_proto(failure)),
            }),
        ),
        EventKind::ExecutionTerminated { reason, output } => (
            NO_TASK,
            E::ExecutionTerminated(proto::ExecutionTerminatedEvent {
                input: output.as_ref().map_or_else(|| reason_json(reason), input),
                recurse: false,
            }),
        ),
        EventKind::ContinuedAsNew { input: i, .. } => (
            NO_TASK,
            E::ContinueAsNew(proto::ContinueAsNewEvent { input: input(i) }),
        ),
        EventKind::OrchestratorStarted => (
            NO_TASK,
            E::OrchestratorStarted(proto::OrchestratorStartedEvent::default()),
        ),
        EventKind::OrchestratorCompleted => (
            NO_TASK,
            E::OrchestratorCompleted(proto::OrchestratorCompletedEvent::default()),
        ),
        EventKind::TaskScheduled {
            task_id,
            name,
            version,
            input: i,
            tags,
            ..
        } => (
            task(*task_id),
            E::TaskScheduled(proto::TaskScheduledEvent {
                name: name.clone(),
                version: version.clone(),
                input: input(i),
                tags: tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                ..proto::TaskScheduledEvent::default()
            }),
        ),
        EventKind::TaskCompleted { task_id, result } => (
            NO_TASK,
            E::TaskCompleted(proto::TaskCompletedEvent {
                task_scheduled_id: task(*task_id),
                result: input(result),
            }),
        ),
        EventKind::TaskFailed { task_id, failure } => (
            NO_TASK,
            E::TaskFailed(proto::TaskFailedEvent {
                task_scheduled_id: task(*task_id),
                failure_details: Some(failure_to_proto(failure)),
            }),
        ),
        EventKind::SubOrchestrationCreated {
            task_id,
            name,
            version,
            instance_id,
            input: i,
            tags,
        } => (
            task(*task_id),
            E::SubOrchestrationInstanceCreated(proto::SubOrchestrationInstanceCreatedEvent {
                instance_id: instance_id.to_string(),
                name: name.clone(),
                version: version.clone(),
                input: input(i),
                tags: tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                ..proto::SubOrchestrationInstanceCreatedEvent::default()
            }),
        ),
        EventKind::SubOrchestrationCompleted { task_id, result } => (
            NO_TASK,
            E::SubOrchestrationInstanceCompleted(proto::SubOrchestrationInstanceCompletedEvent {
                task_scheduled_id: task(*task_id),
                result: input(result),
            }),
        ),
        EventKind::SubOrchestrationFailed { task_id, failure } => (
            NO_TASK,
            E::SubOrchestrationInstanceFailed(proto::SubOrchestrationInstanceFailedEvent {
                task_scheduled_id: task(*task_id),
                failure_details: Some(failure_to_proto(failure)),
            }),
        ),
        EventKind::TimerCreated { task_id, fire_at } => (
            task(*task_id),
            E::TimerCreated(proto::TimerCreatedEvent {
                fire_at: Some(timestamp_to_proto(*fire_at)),
            }),
        ),
        EventKind::TimerFired { task_id, fire_at } => (
            NO_TASK,
            E::TimerFired(proto::TimerFiredEvent {
                fire_at: Some(timestamp_to_proto(*fire_at)),
                timer_id: task(*task_id),
            }),
        ),
        EventKind::EventRaised { name, input: i } => (
            NO_TASK,
            E::EventRaised(proto::EventRaisedEvent {
                name: name.clone(),
                input: input(i),
            }),
        ),
        EventKind::EventSent {
            task_id,
            instance_id,
            name,
            input: i,
        } => (
            task(*task_id),
            E::EventSent(proto::EventSentEvent {
                instance_id: instance_id.to_string(),
                name: name.clone(),
                input: input(i),
            }),
        ),
        EventKind::ExecutionSuspended { reason } => (
            NO_TASK,
            E::ExecutionSuspended(proto::ExecutionSuspendedEvent {
                input: reason.clone(),
            }),
        ),
        EventKind::ExecutionResumed { reason } => (
            NO_TASK,
            E::ExecutionResumed(proto::ExecutionResumedEvent {
                input: reason.clone(),
            }),
        ),
        // The rewind turn's first event after `orchestratorStarted` (the SDKs read it as a
        // jump-start: they replay the rewound history and schedule the dropped tasks again).
        // The task IDs it lists are Taskhub's bookkeeping: the protocol has no field for them.
        EventKind::ExecutionRewound { reason, .. } => (
            NO_TASK,
            E::ExecutionRewound(proto::ExecutionRewoundEvent {
                reason: reason.clone(),
                ..proto::ExecutionRewoundEvent::default()
            }),
        ),
        // A kind added to Taskhub later: a generic event naming it, which the SDKs ignore.
        other => (
            NO_TASK,
            E::GenericEvent(proto::GenericEvent {
                data: Some(other.type_name().to_owned()),
            }),
        ),
    }
}

/// The protocol's history event as Taskhub's.
///
/// # Errors
/// [`ConvertError`] naming the field that is missing or invalid, or the kind Taskhub has no
/// equivalent for.
pub fn event_from_proto(p: &proto::HistoryEvent) -> Result<HistoryEvent, ConvertError> {
    let timestamp = match &p.timestamp {
        Some(t) => timestamp_from_proto(t, "timestamp")?,
        None => taskhub::Timestamp::EPOCH,
    };
    let kind = p
        .event_type
        .as_ref()
        .ok_or_else(|| ConvertError::field("eventType", "missing"))?;
    let mut event = HistoryEvent::new(timestamp, kind_from_proto(p.event_id, kind)?);
    let context = match kind {
        E::TaskScheduled(t) => t.parent_trace_context.as_ref(),
        E::SubOrchestrationInstanceCreated(s) => s.parent_trace_context.as_ref(),
        _ => None,
    };
    event.trace = context
        .map(|c| c.trace_parent.trim().to_owned())
        .filter(|t| !t.is_empty());
    Ok(event)
}

fn task_id(id: i32, field: &'static str) -> Result<u64, ConvertError> {
    u64::try_from(id).map_err(|_| ConvertError::field(field, format!("{id} is not a task ID")))
}

fn instance_id(id: &str, field: &'static str) -> Result<InstanceId, ConvertError> {
    InstanceId::new(id).map_err(|e| ConvertError::field(field, e.to_string()))
}

fn execution_id(
    o: Option<&proto::OrchestrationInstance>,
    field: &'static str,
) -> Result<ExecutionId, ConvertError> {
    let id = o
        .and_then(|o| o.execution_id.as_deref())
        .ok_or_else(|| ConvertError::field(field, "missing"))?;
    ExecutionId::new(id).map_err(|e| ConvertError::field(field, e.to_string()))
}

fn failure(f: Option<&proto::TaskFailureDetails>) -> FailureDetails {
    f.map_or_else(
        || FailureDetails::new("Unknown", "no failure details were given"),
        failure_from_proto,
    )
}

/// A reason sent as JSON text (a JSON string is taken as its text; other JSON as it is).
fn reason_text(input: Option<&str>) -> String {
    match input {
        None | Some("") => String::new(),
        Some(text) => serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_owned()),
    }
}

/// A terminate's output as sent, kept as the instance's output; none for no value or a JSON
/// string (which is the reason, and as a JSON string the output already).
pub(crate) fn terminate_output(input: Option<&str>) -> Option<Payload> {
    input
        .filter(|t| !t.is_empty() && serde_json::from_str::<String>(t).is_err())
        .map(Payload::from_text)
}

fn time(
    t: Option<&prost_types::Timestamp>,
    field: &'static str,
) -> Result<taskhub::Timestamp, ConvertError> {
    timestamp_from_proto(
        t.ok_or_else(|| ConvertError::field(field, "missing"))?,
        field,
    )
}

fn kind_from_proto(event_id: i32, k: &E) -> Result<EventKind, ConvertError> {
    Ok(match k {
        E::ExecutionStarted(s) => EventKind::ExecutionStarted {
            name: s.name.clone(),
            version: s.version.clone(),
            input: payload_from_proto(s.input.as_deref(), "executionStarted.input")?,
            execution_id: execution_id(
                s.orchestration_instance.as_ref(),
                "executionStarted.orchestrationInstance.executionId",
            )?,
            parent: s.parent_instance.as_ref().map(parent).transpose()?,
            scheduled_start: optional_timestamp_from_proto(
                s.scheduled_start_timestamp.as_ref(),
                "executionStarted.scheduledStartTimestamp",
            )?,
            applied_event_ids: Vec::new(),
            tags: Box::new(s.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        },
        E::ExecutionCompleted(c) => match S::try_from(c.orchestration_status) {
            Ok(S::Completed) => EventKind::ExecutionCompleted {
                result: payload_from_proto(c.result.as_deref(), "executionCompleted.result")?,
            },
            Ok(S::Failed) => EventKind::ExecutionFailed {
                failure: failure(c.failure_details.as_ref()),
            },
            Ok(S::Terminated) => EventKind::ExecutionTerminated {
                reason: reason_text(c.result.as_deref()),
                output: terminate_output(c.result.as_deref()),
            },
            _ => {
                return Err(ConvertError::field(
                    "executionCompleted.orchestrationStatus",
                    format!("{} does not end an execution", c.orchestration_status),
                ))
            }
        },
        E::ExecutionTerminated(t) => EventKind::ExecutionTerminated {
            reason: reason_text(t.input.as_deref()),
            output: terminate_output(t.input.as_deref()),
        },
        E::ContinueAsNew(c) => EventKind::ContinuedAsNew {
            input: payload_from_proto(c.input.as_deref(), "continueAsNew.input")?,
            version: None,
            carried_events: Vec::new(),
            dropped_events: Vec::new(),
        },
        E::OrchestratorStarted(_) => EventKind::OrchestratorStarted,
        E::OrchestratorCompleted(_) => EventKind::OrchestratorCompleted,
        E::TaskScheduled(t) => EventKind::TaskScheduled {
            task_id: task_id(event_id, "eventId")?,
            name: t.name.clone(),
            version: t.version.clone(),
            input: payload_from_proto(t.input.as_deref(), "taskScheduled.input")?,
            attempt: 1,
            tags: t.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        },
        E::TaskCompleted(t) => EventKind::TaskCompleted {
            task_id: task_id(t.task_scheduled_id, "taskCompleted.taskScheduledId")?,
            result: payload_from_proto(t.result.as_deref(), "taskCompleted.result")?,
        },
        E::TaskFailed(t) => EventKind::TaskFailed {
            task_id: task_id(t.task_scheduled_id, "taskFailed.taskScheduledId")?,
            failure: failure(t.failure_details.as_ref()),
        },
        E::SubOrchestrationInstanceCreated(s) => EventKind::SubOrchestrationCreated {
            task_id: task_id(event_id, "eventId")?,
            name: s.name.clone(),
            version: s.version.clone(),
            instance_id: instance_id(&s.instance_id, "subOrchestrationInstanceCreated.instanceId")?,
            input: payload_from_proto(s.input.as_deref(), "subOrchestrationInstanceCreated.input")?,
            tags: Box::new(s.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        },
        E::SubOrchestrationInstanceCompleted(s) => EventKind::SubOrchestrationCompleted {
            task_id: task_id(
                s.task_scheduled_id,
                "subOrchestrationInstanceCompleted.taskScheduledId",
            )?,
            result: payload_from_proto(
                s.result.as_deref(),
                "subOrchestrationInstanceCompleted.result",
            )?,
        },
        E::SubOrchestrationInstanceFailed(s) => EventKind::SubOrchestrationFailed {
            task_id: task_id(
                s.task_scheduled_id,
                "subOrchestrationInstanceFailed.taskScheduledId",
            )?,
            failure: failure(s.failure_details.as_ref()),
        },
        E::TimerCreated(t) => EventKind::TimerCreated {
            task_id: task_id(event_id, "eventId")?,
            fire_at: time(t.fire_at.as_ref(), "timerCreated.fireAt")?,
        },
        E::TimerFired(t) => EventKind::TimerFired {
            task_id: task_id(t.timer_id, "timerFired.timerId")?,
            fire_at: time(t.fire_at.as_ref(), "timerFired.fireAt")?,
        },
        E::EventSent(s) => EventKind::EventSent {
            task_id: task_id(event_id, "eventId")?,
            instance_id: instance_id(&s.instance_id, "eventSent.instanceId")?,
            name: s.name.clone(),
            input: payload_from_proto(s.input.as_deref(), "eventSent.input")?,
        },
        E::EventRaised(r) => EventKind::EventRaised {
            name: r.name.clone(),
            input: payload_from_proto(r.input.as_deref(), "eventRaised.input")?,
        },
        E::ExecutionSuspended(s) => EventKind::ExecutionSuspended {
            reason: s.input.clone(),
        },
        E::ExecutionResumed(r) => EventKind::ExecutionResumed {
            reason: r.input.clone(),
        },
        E::GenericEvent(_) => return Err(ConvertError::Unsupported("genericEvent")),
        E::HistoryState(_) => return Err(ConvertError::Unsupported("historyState")),
        E::EntityOperationSignaled(_) => {
            return Err(ConvertError::Unsupported("entityOperationSignaled"))
        }
        E::EntityOperationCalled(_) => {
            return Err(ConvertError::Unsupported("entityOperationCalled"))
        }
        E::EntityOperationCompleted(_) => {
            return Err(ConvertError::Unsupported("entityOperationCompleted"))
        }
        E::EntityOperationFailed(_) => {
            return Err(ConvertError::Unsupported("entityOperationFailed"))
        }
        E::EntityLockRequested(_) => return Err(ConvertError::Unsupported("entityLockRequested")),
        E::EntityLockGranted(_) => return Err(ConvertError::Unsupported("entityLockGranted")),
        E::EntityUnlockSent(_) => return Err(ConvertError::Unsupported("entityUnlockSent")),
        // The fields for a sub-orchestration's parent and the DTS backend's are not kept: a
        // rewind keeps the execution's start as it was.
        E::ExecutionRewound(r) => EventKind::ExecutionRewound {
            reason: r.reason.clone(),
            rewound_tasks: Vec::new(),
        },
    })
}

fn parent(p: &proto::ParentInstanceInfo) -> Result<ParentInstance, ConvertError> {
    let o = p.orchestration_instance.as_ref();
    Ok(ParentInstance {
        instance_id: instance_id(
            o.map_or("", |o| o.instance_id.as_str()),
            "executionStarted.parentInstance.orchestrationInstance.instanceId",
        )?,
        execution_id: execution_id(
            o,
            "executionStarted.parentInstance.orchestrationInstance.executionId",
        )?,
        task_id: task_id(
            p.task_scheduled_id,
            "executionStarted.parentInstance.taskScheduledId",
        )?,
        name: p.name.as_deref().filter(|n| !n.is_empty()).map(Into::into),
    })
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
