//! `RestartInstance`: an instance again, with its name, original input, version and tags,
//! under the same ID (a finished instance only) or a new one (any instance: the old one is
//! left as it is, running or not, as the managed scheduler does).

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
    // Under the same ID, only a finished instance (the SDKs' contract; Taskhub's client would
    // terminate it). Under a new ID the old instance is not touched.
    if !status.status().is_terminal() && !r.restart_with_new_instance_id {
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
