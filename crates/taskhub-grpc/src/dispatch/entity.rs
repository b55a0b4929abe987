//! Entity batches over the protocol: an [`EntityWork`] goes out as the `EntityBatchRequest`
//! the SDKs of today take (`WorkItem.entityRequest`; the Python SDK 1.12.0 reads both it and
//! `entityRequestV2`), and the worker's `EntityBatchResult` comes back as an
//! [`EntityBatchOutcome`].
//!
//! An answer the runtime cannot take does not fail the worker and is not a gRPC error: a
//! batch-level `failureDetails`, or an action that cannot be taken
//! (a signal to something that is no entity ID, an action of no kind) fails every operation
//! of the batch with a failure naming the field, and the state stays as it was; so do more
//! results than operations, and a start whose instance ID is reserved (`@`: entities). One
//! result that cannot be taken (no kind) fails that operation only. States, inputs and
//! results are passed through as the SDK sent them (JSON or opaque text); a state of no
//! value or JSON `null` is no state (the entity is deleted).

use taskhub::entity::{EntityAction, EntityId};
use taskhub::executor::{EntityBatchOutcome, EntityWork};
use taskhub::{FailureDetails, InstanceId, Payload};

use crate::convert::{
    failure_from_proto, payload_from_proto, payload_to_proto, timestamp_from_proto, ConvertError,
};
use crate::proto::{
    self, operation_action::OperationActionType as A, operation_result::ResultType,
    EntityBatchRequest, EntityBatchResult, OperationRequest,
};

/// The `errorType` of the failures an answer that cannot be taken turns into.
pub const INVALID_ENTITY_RESULT: &str = "InvalidEntityBatchResult";

/// The protocol's request for one entity batch.
#[must_use]
pub(crate) fn entity_request(work: &EntityWork) -> EntityBatchRequest {
    EntityBatchRequest {
        instance_id: work.entity.to_string(),
        entity_state: work.state.as_ref().and_then(payload_to_proto),
        operations: work
            .operations
            .iter()
            .map(|op| OperationRequest {
                operation: op.name.clone(),
                request_id: op.request_id.clone(),
                input: payload_to_proto(&op.input),
                trace_context: None,
            })
            .collect(),
        properties: std::collections::HashMap::new(),
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
                at: s
                    .scheduled_time
                    .as_ref()
                    .map(|t| timestamp_from_proto(t, "sendSignal.scheduledTime"))
                    .transpose()?,
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
