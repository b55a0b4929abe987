//! `RestartInstance`: an instance again, with its name, original input, version and tags,
//! under the same ID (a finished instance only) or a new one (any instance: the old one is
//! left as it is, running or not, as the managed scheduler does). The row is read once: the
//! client's restart decides on it (`ReplaceIn(finished)` under the same ID).

use taskhub::{ReusePolicy, StatusSet, TaskHubClient, TaskhubError};
use tonic::Status;

use super::fields;
use crate::error::status_of;
use crate::proto::{RestartInstanceRequest, RestartInstanceResponse};

pub(crate) async fn restart(
    client: &TaskHubClient,
    r: RestartInstanceRequest,
) -> Result<RestartInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    // Under the same ID, only a finished instance (the SDKs' contract; Taskhub's client would
    // terminate it). Under a new ID the old instance is not touched.
    let reuse = ReusePolicy::ReplaceIn(StatusSet::finished());
    match client
        .restart_with(&id, r.restart_with_new_instance_id, reuse)
        .await
    {
        Ok(new_id) => Ok(RestartInstanceResponse {
            instance_id: new_id.to_string(),
        }),
        Err(TaskhubError::AlreadyExists {
            instance_id,
            status,
        }) => Err(status_of(&TaskhubError::WrongStatus {
            instance_id,
            status,
            operation: "restart (only a finished instance can be restarted)",
        })),
        Err(e) => Err(status_of(&e)),
    }
}

#[cfg(test)]
#[path = "restart_tests.rs"]
mod tests;
