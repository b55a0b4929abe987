//! The calls about the hub itself and the ones Taskhub answers without a client operation:
//! `Hello`, `CreateTaskHub`, `DeleteTaskHub` and `RewindInstance`.
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

use crate::error::status_of;
use crate::proto::{CreateTaskHubRequest, CreateTaskHubResponse, DeleteTaskHubResponse};

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

/// `RewindInstance`: Taskhub has no rewind (as its HTTP route answers).
pub(crate) fn rewind() -> Status {
    Status::unimplemented("rewind is not supported by Taskhub: restart the instance instead")
}
