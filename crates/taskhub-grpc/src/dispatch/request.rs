//! Work going out: an [`OrchestrationWork`] as an `OrchestratorRequest`, an [`ActivityWork`]
//! as an `ActivityRequest`. History goes whole in `pastEvents`/`newEvents`, the past events
//! encoded, from the [`PastCache`] (a turn too large to go whole is sent without them to a
//! worker that streams history: `state.rs`, `streaming.rs`).

use std::sync::Mutex;

use taskhub::executor::{ActivityWork, OrchestrationWork};
use taskhub::EventKind;

use super::filters::WorkName;
use super::past::{self, PastCache};
use super::state::Outgoing;
use crate::convert::{
    event_to_proto_with_entities, payload_to_proto, timestamp_to_proto, EntityRequests,
};
use crate::proto::{
    work_item, ActivityRequest, OrchestrationInstance, OrchestrationTraceContext,
    OrchestratorRequest, TraceContext,
};

/// The protocol's request for one orchestration turn, its past events encoded by `cache`.
#[must_use]
pub(crate) fn orchestrator_request(work: &OrchestrationWork, cache: &Mutex<PastCache>) -> Outgoing {
    let requests = EntityRequests::of(work.past.iter().chain(&work.new));
    let past = past::past_of(cache, work, &requests);
    let request = OrchestratorRequest {
        instance_id: work.instance.to_string(),
        execution_id: Some(work.execution_id.to_string()),
        new_events: work
            .new
            .iter()
            .map(|e| event_to_proto_with_entities(e, &work.instance, &requests))
            .collect(),
        // The SDK's span of the execution, as its last answer gave it (best effort).
        orchestration_trace_context: work.span.as_ref().map(|s| OrchestrationTraceContext {
            span_id: Some(s.span_id.clone()),
            span_start_time: s.start.map(timestamp_to_proto),
        }),
        ..OrchestratorRequest::default()
    };
    Outgoing {
        request: work_item::Request::OrchestratorRequest(request),
        past,
        name: Some(WorkName::new(work.name.clone(), version_of(work))),
    }
}

/// The version the execution of `work` was started with.
fn version_of(work: &OrchestrationWork) -> Option<String> {
    work.past
        .iter()
        .chain(&work.new)
        .find_map(|e| match &e.event {
            EventKind::ExecutionStarted { version, .. } => version.clone(),
            _ => None,
        })
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
        tags: work.tags.clone().into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use taskhub::{ExecutionId, InstanceId};

    use super::*;

    #[test]
    fn an_activity_request_carries_the_task_s_tags() {
        let mut work = ActivityWork::new(
            InstanceId::new("i").unwrap(),
            ExecutionId::new("e").unwrap(),
            4,
            "Ship".into(),
        );
        work.tags = [("team".to_owned(), "ops".to_owned())].into();
        let r = activity_request(&work);
        assert_eq!(r.tags.len(), 1);
        assert_eq!(r.tags.get("team").map(String::as_str), Some("ops"));
        assert_eq!(r.task_id, 4);
        let untagged = activity_request(&ActivityWork::new(
            InstanceId::new("i").unwrap(),
            ExecutionId::new("e").unwrap(),
            5,
            "Ship".into(),
        ));
        assert!(untagged.tags.is_empty());
    }
}
