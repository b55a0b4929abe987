//! Work going out: an [`OrchestrationWork`] as an `OrchestratorRequest`, an [`ActivityWork`]
//! as an `ActivityRequest`. History goes whole in `pastEvents`/`newEvents` (the worker's
//! `requiresHistoryStreaming` is never asked for).

use std::collections::HashMap;

use taskhub::executor::{ActivityWork, OrchestrationWork};

use crate::convert::{event_to_proto_with_entities, payload_to_proto, EntityRequests};
use crate::proto::{ActivityRequest, OrchestrationInstance, OrchestratorRequest, TraceContext};

/// The protocol's request for one orchestration turn.
#[must_use]
pub(crate) fn orchestrator_request(work: &OrchestrationWork) -> OrchestratorRequest {
    let requests = EntityRequests::of(work.past.iter().chain(&work.new));
    OrchestratorRequest {
        instance_id: work.instance.to_string(),
        execution_id: Some(work.execution_id.to_string()),
        past_events: work
            .past
            .iter()
            .map(|e| event_to_proto_with_entities(e, &work.instance, &requests))
            .collect(),
        new_events: work
            .new
            .iter()
            .map(|e| event_to_proto_with_entities(e, &work.instance, &requests))
            .collect(),
        ..OrchestratorRequest::default()
    }
}

/// The protocol's request for one activity.
#[must_use]
pub(crate) fn activity_request(work: &ActivityWork) -> ActivityRequest {
    ActivityRequest {
        name: work.name.clone(),
        version: work.version.clone(),
        input: payload_to_proto(&work.input),
        orchestration_instance: Some(OrchestrationInstance {
            instance_id: work.instance.to_string(),
            execution_id: Some(work.execution_id.to_string()),
        }),
        task_id: i32::try_from(work.task_id).unwrap_or(i32::MAX),
        parent_trace_context: work.traceparent.as_ref().map(|t| TraceContext {
            trace_parent: t.clone(),
            ..TraceContext::default()
        }),
        tags: HashMap::new(),
    }
}
