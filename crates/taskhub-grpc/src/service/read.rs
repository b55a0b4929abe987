//! `GetInstance`, `WaitForInstanceStart` and `WaitForInstanceCompletion`.

use std::time::Duration;

use taskhub::{InstanceId, OrchestrationStatus, StatusOptions, TaskHubClient, TaskhubError};
use taskhub_storage::Clock;
use tonic::Status;

use super::deadline::NO_DEADLINE_WAIT;
use super::fields;
use crate::convert::{state_to_proto, StateOptions};
use crate::error::status_of;
use crate::proto::{GetInstanceRequest, GetInstanceResponse};

/// The longest pause between two reads of a row while waiting for an instance to start.
const START_POLL_MAX: Duration = Duration::from_secs(1);

fn options(r: &GetInstanceRequest) -> StateOptions {
    StateOptions {
        inputs_and_outputs: r.get_inputs_and_outputs,
    }
}

fn missing() -> GetInstanceResponse {
    GetInstanceResponse {
        exists: false,
        orchestration_state: None,
    }
}

async fn read(
    client: &TaskHubClient,
    id: &InstanceId,
    options: StateOptions,
) -> Result<Option<(OrchestrationStatus, GetInstanceResponse)>, Status> {
    let status = client
        .get_status(id, StatusOptions::default())
        .await
        .map_err(|e| status_of(&e))?;
    Ok(status.map(|s| {
        (
            s.status(),
            GetInstanceResponse {
                exists: true,
                orchestration_state: Some(state_to_proto(&s.row, options)),
            },
        )
    }))
}

/// `GetInstance`: `exists: false` for an unknown instance.
pub(crate) async fn get(
    client: &TaskHubClient,
    r: GetInstanceRequest,
) -> Result<GetInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    Ok(read(client, &id, options(&r))
        .await?
        .map_or_else(missing, |(_, response)| response))
}

/// `WaitForInstanceCompletion`: answers once the instance completed, failed or was
/// terminated, waiting on the hub's in-process wake-ups (the client's `wait_for_completion`),
/// for at most the call's deadline.
pub(crate) async fn wait_for_completion(
    client: &TaskHubClient,
    r: GetInstanceRequest,
    deadline: Option<Duration>,
) -> Result<GetInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    match client
        .wait_for_completion(&id, deadline.unwrap_or(NO_DEADLINE_WAIT))
        .await
    {
        Ok(done) => Ok(GetInstanceResponse {
            exists: true,
            orchestration_state: Some(state_to_proto(&done.row, options(&r))),
        }),
        Err(TaskhubError::NotFound(_)) => Ok(missing()),
        Err(e) => Err(status_of(&e)),
    }
}

/// `WaitForInstanceStart`: answers once the instance is no longer Pending. The client has no
/// wake-up for "started" (its subscription to status changes is internal to the runtime), so
/// this re-reads the row with a back-off from 50 ms to 1 s, for at most the call's deadline.
pub(crate) async fn wait_for_start(
    client: &TaskHubClient,
    clock: &dyn Clock,
    r: GetInstanceRequest,
    deadline: Option<Duration>,
) -> Result<GetInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let limit = deadline.unwrap_or(NO_DEADLINE_WAIT);
    let started = clock.monotonic();
    let mut pause = Duration::from_millis(50);
    loop {
        match read(client, &id, options(&r)).await? {
            None => return Ok(missing()),
            Some((status, response)) if status != OrchestrationStatus::Pending => {
                return Ok(response)
            }
            Some(_) => {}
        }
        let left = limit.saturating_sub(clock.monotonic().saturating_sub(started));
        if left.is_zero() {
            return Err(status_of(&TaskhubError::Timeout(limit, id)));
        }
        clock.sleep(pause.min(left)).await;
        pause = (pause * 2).min(START_POLL_MAX);
    }
}
