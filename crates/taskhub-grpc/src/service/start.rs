//! `StartInstance`: a new instance with its input, version, tags, scheduled start, trace
//! parent and ID reuse policy.

use taskhub::telemetry::TraceContext;
use taskhub::{InstanceId, StartOptions, StatusOptions, TaskHubClient, TaskhubError};
use taskhub_storage::Clock;
use tonic::Status;

use super::fields;
use super::reuse::{self, decide, Decision, Listed};
use crate::convert::payload_from_proto;
use crate::error::{invalid, invalid_value, status_of};
use crate::library::Library;
use crate::proto::{CreateInstanceRequest, CreateInstanceResponse, CreateOrchestrationAction};

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
    if taskhub::EntityId::is_entity_instance(&instance_id) {
        return Err(invalid(
            "instanceId",
            "IDs starting with '@' are reserved for entities",
        ));
    }
    let input = payload_from_proto(r.input.as_deref(), "input").map_err(|e| invalid_value(&e))?;
    let action = match r.orchestration_id_reuse_policy.as_ref() {
        #[expect(deprecated, reason = "an older client's action (service/reuse.rs)")]
        Some(p) if p.action == CreateOrchestrationAction::Ignore as i32 => Listed::Keep,
        _ => Listed::Replace,
    };
    let mut replaceable = fields::statuses(
        r.orchestration_id_reuse_policy
            .as_ref()
            .map_or(&[][..], |p| &p.replaceable_status),
        "orchestrationIdReusePolicy.replaceableStatus",
    )?;
    if library == Library::Java && r.orchestration_id_reuse_policy.is_none() {
        // Its protos have no reuse policy: a finished instance is replaced (`crate::library`).
        replaceable = reuse::FINISHED.to_vec();
    }
    if library == Library::Go && action == Listed::Replace {
        #[expect(deprecated, reason = "an older client's action (service/reuse.rs)")]
        let terminate = r
            .orchestration_id_reuse_policy
            .as_ref()
            .is_some_and(|p| p.action == CreateOrchestrationAction::Terminate as i32);
        if !terminate {
            // The Go SDK's `ERROR` (0): an existing instance is refused whatever its status,
            // as its own backend does (`handleInstanceExists`).
            replaceable.clear();
        }
    }
    // The JavaScript SDK sends the epoch for "no start time": any time not after now is now.
    let start_at = fields::time(
        r.scheduled_start_timestamp.as_ref(),
        "scheduledStartTimestamp",
    )?
    .filter(|at| *at > clock.now())
    .map(taskhub::Timestamp::to_system_time);
    let trace_parent =
        match r
            .parent_trace_context
            .as_ref()
            .map(|t| t.trace_parent.as_str())
        {
            None | Some("") => None,
            Some(tp) => Some(TraceContext::parse(tp).ok_or_else(|| {
                invalid("parentTraceContext.traceParent", "not a W3C traceparent")
            })?),
        };
    let existing = client
        .get_status(&instance_id, StatusOptions::default())
        .await
        .map_err(|e| status_of(&e))?
        .map(|s| s.status());
    let reuse = match decide(existing, &replaceable, action) {
        Decision::Start(policy) => policy,
        Decision::Keep => {
            return Ok(CreateInstanceResponse {
                instance_id: instance_id.to_string(),
            })
        }
        Decision::Refuse(status) => {
            return Err(status_of(&TaskhubError::AlreadyExists {
                instance_id,
                status,
            }))
        }
    };
    let options = StartOptions {
        instance_id: Some(instance_id),
        version: r.version.filter(|v| !v.is_empty()),
        reuse,
        start_at,
        tags: r.tags.into_iter().collect(),
        trace_parent,
    };
    let id = client
        .start_payload(name, input, options)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(CreateInstanceResponse {
        instance_id: id.to_string(),
    })
}
