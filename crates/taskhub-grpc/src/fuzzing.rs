//! The entry point of the fuzz targets (`fuzz/`, `cargo +nightly fuzz run requests`) and of
//! their stable counterpart in the test command (`tests/fuzz_requests.rs`): bytes from a
//! hostile peer decoded as each message a client or an SDK worker sends, and every decoded
//! message taken through the conversion the endpoint runs on it. None of it may panic; every
//! refusal is a value. Not part of the API.

use prost::Message;
use taskhub::{ExecutionId, InstanceId};

use crate::convert::{
    event_from_proto, failure_from_proto, payload_from_proto, timestamp_from_proto,
};
use crate::dispatch::actions::{activity_outcome, orchestration_decision};
use crate::proto;

/// Decodes `data` as every request the endpoint takes and converts what decodes.
pub fn decode_and_convert(data: &[u8]) {
    let (instance, execution) = ids();
    if let Ok(r) = proto::OrchestratorResponse::decode(data) {
        let max_actions = crate::DispatcherSettings::default().max_actions_per_turn;
        let _ = orchestration_decision(&instance, &execution, &r, max_actions);
    }
    if let Ok(r) = proto::ActivityResponse::decode(data) {
        let _ = activity_outcome(&r);
    }
    if let Ok(e) = proto::HistoryEvent::decode(data) {
        let _ = event_from_proto(&e);
    }
    if let Ok(r) = proto::CreateInstanceRequest::decode(data) {
        let _ = payload_from_proto(r.input.as_deref(), "input");
        if let Some(t) = &r.scheduled_start_timestamp {
            let _ = timestamp_from_proto(t, "scheduledStartTimestamp");
        }
    }
    if let Ok(r) = proto::TaskFailureDetails::decode(data) {
        let _ = failure_from_proto(&r);
    }
    let _ = proto::EntityBatchResult::decode(data);
    let _ = proto::QueryInstancesRequest::decode(data);
    let _ = proto::GetWorkItemsRequest::decode(data);
    let _ = proto::RaiseEventRequest::decode(data);
    let _ = proto::PurgeInstancesRequest::decode(data);
}

/// The instance and execution the decoded answers are taken for.
fn ids() -> (InstanceId, ExecutionId) {
    match (InstanceId::new("fuzzed"), ExecutionId::new("fuzzed-1")) {
        (Ok(i), Ok(e)) => (i, e),
        _ => (InstanceId::random(), ExecutionId::random()),
    }
}
