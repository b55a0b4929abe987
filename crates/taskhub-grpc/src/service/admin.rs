//! The calls about the hub itself (`Hello`, `CreateTaskHub`, `DeleteTaskHub`), and
//! `RewindInstance`.
//!
//! The hub is open in the serving process (and maybe in others, holding leases), so neither
//! call removes its storage: `DeleteTaskHub` and `CreateTaskHub{recreateIfExists}` **empty**
//! it ([`TaskHubClient::clear_hub`]): every instance row (orchestrations and entities), history,
//! queued message (pending timers and scheduled starts with them), large payload and dead
//! letter is removed; the partitions, their leases and epochs and the hub's metadata stay, so
//! every serving process carries on and the hub is usable at once. It is meant for a hub at
//! rest: work under way (calls racing it, messages workers already fetched) may survive it. To remove the storage itself, stop the hub's workers and run
//! `taskhub hub delete`.

use taskhub::TaskHubClient;
use tonic::Status;

use super::fields;
use crate::error::status_of;
use crate::proto::{
    CreateTaskHubRequest, CreateTaskHubResponse, DeleteTaskHubResponse, RewindInstanceRequest,
    RewindInstanceResponse,
};

/// `CreateTaskHub`: the hub exists already (the serving process opened it), so this does
/// nothing; with `recreateIfExists` it empties the hub (see the [module docs](self)).
pub(crate) async fn create_hub(
    client: &TaskHubClient,
    r: &CreateTaskHubRequest,
) -> Result<CreateTaskHubResponse, Status> {
    if r.recreate_if_exists {
        client.clear_hub().await.map_err(|e| status_of(&e))?;
    }
    Ok(CreateTaskHubResponse {})
}

/// `DeleteTaskHub`: empties the hub (see the [module docs](self)).
pub(crate) async fn delete_hub(client: &TaskHubClient) -> Result<DeleteTaskHubResponse, Status> {
    client.clear_hub().await.map_err(|e| status_of(&e))?;
    Ok(DeleteTaskHubResponse {})
}

/// `RewindInstance`: [`TaskHubClient::rewind`] (what a rewind drops and keeps:
/// `taskhub_core::engine::rewind`). An unknown instance is `NOT_FOUND`; one that is not Failed
/// is `FAILED_PRECONDITION` naming its status; the reason is optional (none, or the empty
/// string, records none).
pub(crate) async fn rewind(
    client: &TaskHubClient,
    r: RewindInstanceRequest,
) -> Result<RewindInstanceResponse, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let reason = r.reason.as_deref().filter(|reason| !reason.is_empty());
    client
        .rewind(&id, reason)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(RewindInstanceResponse {})
}
