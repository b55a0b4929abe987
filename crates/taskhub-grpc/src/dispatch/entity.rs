//! Entity batches over the protocol: an [`EntityWork`] goes out as `WorkItem.entityRequestV2`
//! (an `EntityRequest`, each operation an `entityOperationCalled` naming its caller or an
//! `entityOperationSignaled`), which every SDK with entities reads: Python
//! (`durabletask/worker.py`, `_execute_entity_batch` with
//! `helpers.convert_to_entity_batch_request`), JavaScript (`task-hub-grpc-worker.ts`,
//! `_executeEntityV2`) and .NET (`GrpcDurableTaskWorker.Processor.cs`, which completes the older
//! `entityRequest` path without its completion token but this one with it). The worker's
//! `EntityBatchResult` comes back as an [`EntityBatchOutcome`].
//!
//! An answer the runtime cannot take does not fail the worker and is not a gRPC error: a
//! batch-level `failureDetails`, or an action that cannot be taken
//! (a signal to something that is no entity ID, an action of no kind) fails every operation
//! of the batch with a failure naming the field, and the state stays as it was; so do more
//! results than operations, and a start whose instance ID is reserved (`@`: entities). One
//! result that cannot be taken (no kind) fails that operation only. States, inputs and
//! results are passed through as the SDK sent them (JSON or opaque text); a state of no
//! value or JSON `null` is no state (the entity is deleted).

use taskhub::executor::{EntityBatchOutcome, EntityOperation, EntityWork};
use taskhub::{FailureDetails, InstanceId, Payload};
use taskhub_core::entity::{EntityAction, EntityId};

use crate::convert::{
    failure_from_proto, optional_timestamp_from_proto, payload_from_proto, payload_to_proto,
    ConvertError,
};
use crate::proto::{
    self, history_event::EventType, operation_action::OperationActionType as A,
    operation_result::ResultType, EntityBatchResult, EntityOperationCalledEvent,
    EntityOperationSignaledEvent, EntityRequest, HistoryEvent,
};

/// The `errorType` of the failures an answer that cannot be taken turns into.
pub const INVALID_ENTITY_RESULT: &str = "InvalidEntityBatchResult";

/// The protocol's request for one entity batch (`entityRequestV2`).
#[must_use]
pub(crate) fn entity_request(work: &EntityWork) -> EntityRequest {
    EntityRequest {
        instance_id: work.entity.to_string(),
        execution_id: String::new(),
        entity_state: work.state.as_ref().and_then(payload_to_proto),
        operation_requests: work.operations.iter().map(operation_event).collect(),
    }
}

/// One operation as the history event `entityRequestV2` carries: a call naming its caller, or
/// a signal.
fn operation_event(op: &EntityOperation) -> HistoryEvent {
    let event_type = match &op.caller {
        Some(caller) => EventType::EntityOperationCalled(EntityOperationCalledEvent {
            request_id: op.request_id.clone(),
            operation: op.name.clone(),
            input: payload_to_proto(&op.input),
            parent_instance_id: Some(caller.instance_id.to_string()),
            parent_execution_id: Some(caller.execution_id.to_string()),
            ..EntityOperationCalledEvent::default()
        }),
        None => EventType::EntityOperationSignaled(EntityOperationSignaledEvent {
            request_id: op.request_id.clone(),
            operation: op.name.clone(),
            input: payload_to_proto(&op.input),
            ..EntityOperationSignaledEvent::default()
        }),
    };
    HistoryEvent {
        event_id: -1,
        event_type: Some(event_type),
        ..HistoryEvent::default()
    }
}

fn invalid(message: String) -> FailureDetails {
    let mut f = FailureDetails::new(INVALID_ENTITY_RESULT, message);
    f.non_retryable = true;
    f
}

/// A worker's answer to `work`.
#[must_use]
pub(crate) fn entity_outcome(work: &EntityWork, r: &EntityBatchResult) -> EntityBatchOutcome {
    let whole = |failure: FailureDetails| {
        EntityBatchOutcome::new(
            vec![Err(failure); work.operations.len()],
            work.state.clone(),
        )
    };
    if let Some(f) = &r.failure_details {
        return whole(failure_from_proto(f));
    }
    if r.results.len() > work.operations.len() {
        return whole(invalid(format!(
            "the SDK worker's entity batch result cannot be taken: results: {} for {} \
             operation(s)",
            r.results.len(),
            work.operations.len()
        )));
    }
    // Fewer results than operations: the runtime fails those left without one
    // (`MissingOperationResult`) rather than running them again, since the SDK may have run
    // them (their effects on the state are in `entityState`).
    let state = match r.entity_state.as_deref() {
        None => None,
        Some(text) => match payload_from_proto(Some(text), "entityState") {
            // No state, and a JSON `null` state, is no entity (as the SDKs delete one).
            Ok(p) if p.is_absent() || p.as_str() == "null" => None,
            Ok(p) => Some(p),
            Err(e) => {
                return whole(invalid(format!(
                    "the SDK worker's entity batch result cannot be taken: {e}"
                )))
            }
        },
    };
    let mut actions = Vec::with_capacity(r.actions.len());
    for (n, a) in r.actions.iter().enumerate() {
        match action(a, || derived_instance(work, n)) {
            Ok(action) => actions.push(action),
            Err(e) => {
                return whole(invalid(format!(
                    "the SDK worker's entity batch result cannot be taken: actions[{n}].{e}"
                )))
            }
        }
    }
    let results = r.results.iter().enumerate().map(result).collect();
    EntityBatchOutcome::new(results, state).with_actions(actions)
}

fn result((n, r): (usize, &proto::OperationResult)) -> Result<Payload, FailureDetails> {
    match &r.result_type {
        Some(ResultType::Success(s)) => payload_from_proto(s.result.as_deref(), "result")
            .map_err(|e| invalid(format!("results[{n}].success.{e}"))),
        Some(ResultType::Failure(f)) => Err(f.failure_details.as_ref().map_or_else(
            || FailureDetails::new("OperationFailed", "the operation failed without details"),
            failure_from_proto,
        )),
        None => Err(invalid(format!("results[{n}].resultType: missing"))),
    }
}

/// The instance ID of the orchestration that action `n` of the answer to `work` starts without
/// naming one: derived from the entity, the batch's request IDs and `n`, so the batch run again
/// (its commit failed) starts the same instance, once.
fn derived_instance(work: &EntityWork, n: usize) -> String {
    let mut seed = format!("{}\0", work.entity);
    for op in &work.operations {
        seed.push_str(&op.request_id);
        seed.push('\0');
    }
    seed.push_str(&n.to_string());
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, seed.as_bytes())
        .simple()
        .to_string()
}

fn action(
    a: &proto::OperationAction,
    unnamed: impl FnOnce() -> String,
) -> Result<EntityAction, ConvertError> {
    match &a.operation_action_type {
        None => Err(ConvertError::field("operationActionType", "missing")),
        Some(A::SendSignal(s)) => {
            let target = EntityId::parse(&s.instance_id)
                .map_err(|e| ConvertError::field("sendSignal.instanceId", e.to_string()))?;
            if s.name.is_empty() {
                return Err(ConvertError::field("sendSignal.name", "missing"));
            }
            Ok(EntityAction::Signal {
                target,
                op: s.name.clone(),
                input: payload_from_proto(s.input.as_deref(), "sendSignal.input")?,
                at: optional_timestamp_from_proto(
                    s.scheduled_time.as_ref(),
                    "sendSignal.scheduledTime",
                )?,
            })
        }
        Some(A::StartNewOrchestration(s)) => {
            if s.name.is_empty() {
                return Err(ConvertError::field("startNewOrchestration.name", "missing"));
            }
            let id = if s.instance_id.is_empty() {
                unnamed()
            } else {
                s.instance_id.clone()
            };
            let instance_id = InstanceId::new(id).map_err(|e| {
                ConvertError::field("startNewOrchestration.instanceId", e.to_string())
            })?;
            if EntityId::is_entity_instance(&instance_id) {
                return Err(ConvertError::field(
                    "startNewOrchestration.instanceId",
                    "IDs starting with '@' are reserved for entities",
                ));
            }
            Ok(EntityAction::StartOrchestration {
                instance_id,
                name: s.name.clone(),
                input: payload_from_proto(s.input.as_deref(), "startNewOrchestration.input")?,
            })
        }
    }
}

#[cfg(test)]
#[path = "entity_tests.rs"]
mod tests;
