//! `StartInstance`: a new instance with its input, version, tags, scheduled start, trace
//! parent and ID reuse policy (`reuse`: the SDKs' policy as Taskhub's). The request's fields
//! are read here; whether the start replaces, keeps or refuses an instance under its ID is
//! decided by the client's start, on the row it reads once.

use taskhub::telemetry::TraceContext;
use taskhub::{CoreError, InstanceId, StartOptions, TaskHubClient, TaskhubError};
use taskhub_storage::Clock;
use tonic::Status;

use super::{fields, reuse};
use crate::convert::payload_from_proto;
use crate::error::{invalid, invalid_value, status_of};
use crate::library::Library;
use crate::proto::{CreateInstanceRequest, CreateInstanceResponse, TraceContext as ProtoTrace};

pub(crate) async fn start(
    client: &TaskHubClient,
    clock: &dyn Clock,
    library: Library,
    r: CreateInstanceRequest,
) -> Result<CreateInstanceResponse, Status> {
    let name = fields::name(&r.name, "name")?;
    let instance_id = if r.instance_id.is_empty() {
        InstanceId::random()
    } else {
        fields::instance_id(&r.instance_id, "instanceId")?
    };
    let input = payload_from_proto(r.input.as_deref(), "input").map_err(|e| invalid_value(&e))?;
    let reuse = reuse::policy(r.orchestration_id_reuse_policy.as_ref(), library)?;
    // The JavaScript SDK sends the epoch for "no start time": any time not after now is now.
    let start_at = fields::time(
        r.scheduled_start_timestamp.as_ref(),
        "scheduledStartTimestamp",
    )?
    .filter(|at| *at > clock.now())
    .map(taskhub::Timestamp::to_system_time);
    let options = StartOptions {
        instance_id: Some(instance_id),
        version: r.version.filter(|v| !v.is_empty()),
        reuse,
        start_at,
        tags: r.tags.into_iter().collect(),
        trace_parent: trace_parent(r.parent_trace_context.as_ref())?,
    };
    let id = client
        .start_payload(name, input, options)
        .await
        .map_err(|e| start_error(&e))?;
    Ok(CreateInstanceResponse {
        instance_id: id.to_string(),
    })
}

/// The caller's W3C trace context, if it sent one.
fn trace_parent(context: Option<&ProtoTrace>) -> Result<Option<TraceContext>, Status> {
    match context.map(|t| t.trace_parent.as_str()) {
        None | Some("") => Ok(None),
        Some(tp) => TraceContext::parse(tp)
            .map(Some)
            .ok_or_else(|| invalid("parentTraceContext.traceParent", "not a W3C traceparent")),
    }
}

/// The status of a refused start: an invalid instance ID (one reserved for entities) names
/// the request's field, as every other invalid field does.
fn start_error(e: &TaskhubError) -> Status {
    match e {
        TaskhubError::Invalid(CoreError::InvalidInstanceId { reason, .. }) => {
            invalid("instanceId", reason)
        }
        other => status_of(other),
    }
}
