//! `RaiseEvent`, `TerminateInstance` (recursive too), `SuspendInstance`, `ResumeInstance`.
//!
//! As the SDKs expect: an unknown instance is `NOT_FOUND`; an event for a finished instance is
//! accepted and dropped; terminating a finished instance, suspending a suspended one and
//! resuming one that is not suspended do nothing (a resume the orchestration does not expect
//! would fail an SDK orchestration).

use taskhub::{
    InstanceId, OrchestrationStatus, RaiseOptions, StatusOptions, TaskHubClient, TaskhubError,
};
use tonic::Status;

use super::{children, fields};
use crate::convert::{payload_from_proto, terminate_output};
use crate::error::{invalid_value, status_of};
use crate::proto::{
    RaiseEventRequest, RaiseEventResponse, ResumeRequest, ResumeResponse, SuspendRequest,
    SuspendResponse, TerminateRequest, TerminateResponse,
};

/// `Ok(())` for a `WrongStatus` refusal (the call does nothing), else the error's status.
fn nothing_to_do(r: Result<(), TaskhubError>) -> Result<(), Status> {
    match r {
        Ok(()) | Err(TaskhubError::WrongStatus { .. }) => Ok(()),
        Err(e) => Err(status_of(&e)),
    }
}

pub(crate) async fn raise(
    client: &TaskHubClient,
    r: RaiseEventRequest,
) -> Result<RaiseEventResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let name = fields::name(&r.name, "name")?;
    let input = payload_from_proto(r.input.as_deref(), "input").map_err(|e| invalid_value(&e))?;
    nothing_to_do(
        client
            .raise_event_payload(&id, name, input, RaiseOptions::default())
            .await,
    )?;
    Ok(RaiseEventResponse {})
}

/// The termination reason: the SDKs send it as JSON; a JSON string is taken as its text.
fn reason(output: Option<&str>) -> String {
    match output {
        None | Some("") | Some("null") => String::new(),
        Some(text) => serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_owned()),
    }
}

pub(crate) async fn terminate(
    client: &TaskHubClient,
    r: TerminateRequest,
) -> Result<TerminateResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let reason = reason(r.output.as_deref());
    // The output as sent is the instance's output (`{"a":1}` reads back as that object, an
    // opaque payload as its text); no output leaves the reason's.
    let output = terminate_output(r.output.as_deref());
    let end = |id: InstanceId| {
        let reason = reason.clone();
        let output = output.clone();
        async move {
            match output {
                Some(output) => client.terminate_with_output(&id, &reason, output).await,
                None => client.terminate(&id, &reason).await,
            }
        }
    };
    // Walked before the root is terminated: its history names the children either way.
    let tree = if r.recursive {
        children::descendants(client, &id)
            .await
            .map_err(|e| status_of(&e))?
    } else {
        Vec::new()
    };
    nothing_to_do(end(id).await)?;
    for child in tree {
        match end(child).await {
            Ok(()) | Err(TaskhubError::WrongStatus { .. } | TaskhubError::NotFound(_)) => {}
            Err(e) => return Err(status_of(&e)),
        }
    }
    Ok(TerminateResponse {})
}

pub(crate) async fn suspend(
    client: &TaskHubClient,
    r: SuspendRequest,
) -> Result<SuspendResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    match client.suspend(&id, r.reason.as_deref()).await {
        Ok(()) => Ok(SuspendResponse {}),
        Err(TaskhubError::WrongStatus {
            status: OrchestrationStatus::Suspended,
            ..
        }) => Ok(SuspendResponse {}),
        Err(e) => Err(status_of(&e)),
    }
}

pub(crate) async fn resume(
    client: &TaskHubClient,
    r: ResumeRequest,
) -> Result<ResumeResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let status = current(client, &id).await?;
    if status == OrchestrationStatus::Suspended {
        nothing_to_do(client.resume(&id, r.reason.as_deref()).await)?;
    }
    Ok(ResumeResponse {})
}

async fn current(client: &TaskHubClient, id: &InstanceId) -> Result<OrchestrationStatus, Status> {
    client
        .get_status(id, StatusOptions::default())
        .await
        .map_err(|e| status_of(&e))?
        .map(|s| s.status())
        .ok_or_else(|| status_of(&TaskhubError::NotFound(id.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_string_reason_is_its_text() {
        assert_eq!(reason(Some("\"stop\"")), "stop");
        assert_eq!(reason(Some("{\"why\":1}")), "{\"why\":1}");
        assert_eq!(reason(None), "");
        assert_eq!(reason(Some("null")), "");
    }
}
