//! Answers coming in, in one place: an `OrchestratorResponse`'s actions as the runtime's
//! [`Decision`]s, an `ActivityResponse` as an [`ActivityOutcome`].
//!
//! A response the runtime cannot take (a missing name, a timer without `fireAt`, a negative
//! task ID, an action Taskhub does not offer) does not fail the worker
//! and is not a gRPC error: the turn becomes one `Decision::Fail` whose failure
//! (`InvalidOrchestratorAction`) names the action and the field, so the instance fails with
//! a clear reason. The runtime then checks what only it can (a task ID used twice, actions
//! after the end).

use taskhub::executor::{ActivityOutcome, Decision, OrchestrationDecision, OrchestrationSpan};
use taskhub::{CarriedEvent, ExecutionId, FailureDetails, InstanceId};

use super::entity_actions;

use crate::convert::{failure_from_proto, payload_from_proto, timestamp_from_proto, ConvertError};
use crate::proto::{
    self, history_event::EventType, orchestrator_action::OrchestratorActionType as A,
    ActivityResponse, OrchestrationStatus as S, OrchestratorResponse,
};

/// The `errorType` of the failure a malformed response turns into.
pub const INVALID_ACTION: &str = "InvalidOrchestratorAction";

/// A worker's answer to an activity.
pub(crate) fn activity_outcome(r: &ActivityResponse) -> ActivityOutcome {
    if let Some(f) = &r.failure_details {
        return Err(failure_from_proto(f));
    }
    // Any text is a result (JSON or an SDK's opaque payload), passed on unchanged.
    payload_from_proto(r.result.as_deref(), "result").map_err(|e| FailureDetails {
        error_type: "InvalidActivityResult".into(),
        message: format!("the activity's result cannot be taken: {e}"),
        details: None,
        non_retryable: true,
    })
}

/// A worker's answer to an orchestration turn of `instance`, with at most `max_actions`
/// actions (more: the execution fails, naming the cap; none of them is converted).
#[must_use]
pub(crate) fn orchestration_decision(
    instance: &InstanceId,
    execution: &ExecutionId,
    r: &OrchestratorResponse,
    max_actions: usize,
) -> OrchestrationDecision {
    if r.actions.len() > max_actions {
        return OrchestrationDecision::new(vec![Decision::Fail {
            failure: FailureDetails {
                error_type: INVALID_ACTION.into(),
                message: format!(
                    "the SDK worker's answer cannot be taken: actions: {} actions in one turn, \
                     over the cap of {max_actions} (grpc_max_actions_per_turn)",
                    r.actions.len()
                ),
                details: None,
                non_retryable: true,
            },
        }]);
    }
    match convert(instance, execution, r) {
        Ok(d) => d,
        Err(e) => OrchestrationDecision::new(vec![Decision::Fail {
            failure: FailureDetails {
                error_type: INVALID_ACTION.into(),
                message: format!("the SDK worker's answer cannot be taken: {e}"),
                details: None,
                non_retryable: true,
            },
        }]),
    }
}

/// What is wrong with a response: where (`actions[2].createTimer`) and the field's error.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {error}")]
struct Invalid {
    place: String,
    error: ConvertError,
}

fn convert(
    instance: &InstanceId,
    execution: &ExecutionId,
    r: &OrchestratorResponse,
) -> Result<OrchestrationDecision, Invalid> {
    let mut decisions = Vec::with_capacity(r.actions.len());
    for (n, a) in r.actions.iter().enumerate() {
        let (kind, decision) = action(instance, execution, a);
        decisions.push(decision.map_err(|error| Invalid {
            place: format!("actions[{n}].{kind}"),
            error,
        })?);
    }
    let custom_status = r
        .custom_status
        .as_deref()
        .map(|s| payload_from_proto(Some(s), "customStatus"))
        .transpose()
        .map_err(|error| Invalid {
            place: "response".into(),
            error,
        })?;
    let mut d = OrchestrationDecision::new(decisions);
    d.custom_status = custom_status;
    d.span = span(r.orchestration_trace_context.as_ref());
    Ok(d)
}

/// The SDK's span of the whole orchestration (`orchestrationTraceContext`), kept to be echoed
/// in the execution's next request; one without a span ID is none. A start time that is not a
/// time is dropped, not an error: the span is only a hint for the SDK's tracing.
/// The longest span ID kept (a W3C span ID is 16 hex digits; some tracers use 32).
const MAX_SPAN_ID: usize = 64;

fn span(c: Option<&proto::OrchestrationTraceContext>) -> Option<OrchestrationSpan> {
    let c = c?;
    let span_id = c
        .span_id
        .as_deref()
        .map(str::trim)
        // A span ID is 16 hex digits (W3C); anything far longer is not kept and echoed.
        .filter(|s| !s.is_empty() && s.len() <= MAX_SPAN_ID)?;
    Some(OrchestrationSpan {
        span_id: span_id.to_owned(),
        start: c
            .span_start_time
            .as_ref()
            .and_then(|t| timestamp_from_proto(t, "orchestrationTraceContext.spanStartTime").ok()),
    })
}

fn field(name: &'static str, reason: impl Into<String>) -> ConvertError {
    ConvertError::Field {
        field: name,
        reason: reason.into(),
    }
}

fn unsupported(what: &str) -> ConvertError {
    field(
        "orchestratorActionType",
        format!("Taskhub does not offer {what} to SDK workers"),
    )
}

fn task_id(id: i32) -> Result<u64, ConvertError> {
    u64::try_from(id).map_err(|_| field("id", format!("{id} is not a task ID")))
}

fn name(n: &str, f: &'static str) -> Result<String, ConvertError> {
    if n.is_empty() {
        Err(field(f, "missing"))
    } else {
        Ok(n.to_owned())
    }
}

fn target(id: &str, f: &'static str) -> Result<InstanceId, ConvertError> {
    InstanceId::new(id).map_err(|e| field(f, e.to_string()))
}

/// The `traceparent` of an action's `parentTraceContext` (the SDK's span that took the
/// action), if it has one; the runtime ignores one that is not a valid W3C `traceparent`.
fn traceparent(c: Option<&proto::TraceContext>) -> Option<String> {
    c.map(|c| c.trace_parent.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// One action: its kind's name and the decision.
fn action(
    instance: &InstanceId,
    execution: &ExecutionId,
    a: &proto::OrchestratorAction,
) -> (&'static str, Result<Decision, ConvertError>) {
    let Some(kind) = &a.orchestrator_action_type else {
        return ("?", Err(field("orchestratorActionType", "missing")));
    };
    match kind {
        A::ScheduleTask(t) => (
            "scheduleTask",
            (|| {
                Ok(Decision::ScheduleActivity {
                    task_id: task_id(a.id)?,
                    name: name(&t.name, "name")?,
                    version: t.version.clone().filter(|v| !v.is_empty()),
                    input: payload_from_proto(t.input.as_deref(), "input")?,
                    tags: t.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    traceparent: traceparent(t.parent_trace_context.as_ref()),
                })
            })(),
        ),
        A::CreateSubOrchestration(s) => (
            "createSubOrchestration",
            (|| {
                let id = task_id(a.id)?;
                let child = if s.instance_id.is_empty() {
                    target(&format!("{instance}:{id:04}"), "instanceId")?
                } else {
                    target(&s.instance_id, "instanceId")?
                };
                Ok(Decision::StartSubOrchestration {
                    task_id: id,
                    name: name(&s.name, "name")?,
                    version: s.version.clone().filter(|v| !v.is_empty()),
                    instance_id: child,
                    input: payload_from_proto(s.input.as_deref(), "input")?,
                    tags: s.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    traceparent: traceparent(s.parent_trace_context.as_ref()),
                })
            })(),
        ),
        A::CreateTimer(t) => (
            "createTimer",
            (|| {
                let at = t
                    .fire_at
                    .as_ref()
                    .ok_or_else(|| field("fireAt", "missing"))?;
                Ok(Decision::CreateTimer {
                    task_id: task_id(a.id)?,
                    fire_at: timestamp_from_proto(at, "fireAt")?,
                })
            })(),
        ),
        A::SendEvent(e) => (
            "sendEvent",
            (|| {
                let to = e
                    .instance
                    .as_ref()
                    .ok_or_else(|| field("instance", "missing"))?;
                Ok(Decision::SendEvent {
                    task_id: task_id(a.id)?,
                    instance_id: target(&to.instance_id, "instance.instanceId")?,
                    name: name(&e.name, "name")?,
                    input: payload_from_proto(e.data.as_deref(), "data")?,
                })
            })(),
        ),
        A::CompleteOrchestration(c) => ("completeOrchestration", complete(c)),
        A::TerminateOrchestration(_) => (
            "terminateOrchestration",
            Err(unsupported(
                "terminating another instance from an orchestration",
            )),
        ),
        A::SendEntityMessage(m) => (
            "sendEntityMessage",
            task_id(a.id).and_then(|id| entity_actions::entity_message(instance, execution, id, m)),
        ),
        // Checked against the history sent before the answer gets here (`rewind.rs`): a
        // rewind answer taken is asked again, so one reaching here is never a decision.
        A::RewindOrchestration(_) => (
            "rewindOrchestration",
            Err(field(
                "newHistory",
                "a rewind answer is checked against the history the worker was sent, \
                 and is never a decision of its own",
            )),
        ),
    }
}

fn complete(c: &proto::CompleteOrchestrationAction) -> Result<Decision, ConvertError> {
    let status = S::try_from(c.orchestration_status).map_err(|_| {
        field(
            "orchestrationStatus",
            format!("{} is no status", c.orchestration_status),
        )
    })?;
    Ok(match status {
        S::Completed => Decision::Complete {
            result: payload_from_proto(c.result.as_deref(), "result")?,
        },
        S::Failed => Decision::Fail {
            failure: c.failure_details.as_ref().map_or_else(
                || {
                    FailureDetails::new(
                        "OrchestrationFailed",
                        "the orchestration failed without details",
                    )
                },
                failure_from_proto,
            ),
        },
        S::Terminated => Decision::Terminate {
            reason: payload_from_proto(c.result.as_deref(), "result")?,
        },
        S::ContinuedAsNew => Decision::ContinueAsNew {
            input: payload_from_proto(c.result.as_deref(), "result")?,
            version: c.new_version.clone().filter(|v| !v.is_empty()),
            carried_events: c
                .carryover_events
                .iter()
                .map(carried)
                .collect::<Result<_, _>>()?,
        },
        other => {
            return Err(field(
                "orchestrationStatus",
                format!("{} does not end an execution", other.as_str_name()),
            ))
        }
    })
}

fn carried(e: &proto::HistoryEvent) -> Result<CarriedEvent, ConvertError> {
    match &e.event_type {
        Some(EventType::EventRaised(r)) => Ok(CarriedEvent {
            name: name(&r.name, "carryoverEvents.eventRaised.name")?,
            input: payload_from_proto(r.input.as_deref(), "carryoverEvents.eventRaised.input")?,
        }),
        _ => Err(field(
            "carryoverEvents",
            "only eventRaised events can be carried over",
        )),
    }
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
