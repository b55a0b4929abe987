//! `RestartInstance`: a finished instance again, with its name, original input, version and
//! tags, under the same ID or a new one.

use taskhub::{StatusOptions, TaskHubClient, TaskhubError};
use tonic::Status;

use super::fields;
use crate::error::status_of;
use crate::proto::{RestartInstanceRequest, RestartInstanceResponse};

pub(crate) async fn restart(
    client: &TaskHubClient,
    r: RestartInstanceRequest,
) -> Result<RestartInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let status = client
        .get_status(&id, StatusOptions::default())
        .await
        .map_err(|e| status_of(&e))?
        .ok_or_else(|| status_of(&TaskhubError::NotFound(id.clone())))?;
    // Only a finished instance (the SDKs' contract; Taskhub's client would terminate it).
    if !status.status().is_terminal() {
        return Err(status_of(&TaskhubError::WrongStatus {
            instance_id: id,
            status: status.status(),
            operation: "restart (only a finished instance can be restarted)",
        }));
    }
    let new_id = client
        .restart(&id, r.restart_with_new_instance_id)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(RestartInstanceResponse {
        instance_id: new_id.to_string(),
    })
}
