//! The calls Taskhub answers without a client operation: `Hello`, `CreateTaskHub`,
//! `DeleteTaskHub` and `RewindInstance`.

use tonic::Status;

use crate::proto::{CreateTaskHubRequest, CreateTaskHubResponse};

/// `CreateTaskHub`: the hub exists already (the serving process opened it), so this does
/// nothing; `recreateIfExists` is refused, as deleting a hub under its workers is not a call.
pub(crate) fn create_hub(r: &CreateTaskHubRequest) -> Result<CreateTaskHubResponse, Status> {
    if r.recreate_if_exists {
        return Err(Status::unimplemented(
            "recreateIfExists: Taskhub does not delete a hub over gRPC; stop its workers and run `taskhub hub delete`, then start again",
        ));
    }
    Ok(CreateTaskHubResponse {})
}

/// `DeleteTaskHub`: refused (the hub is in use by the serving process).
pub(crate) fn delete_hub() -> Status {
    Status::unimplemented(
        "DeleteTaskHub is not served: stop the hub's workers and run `taskhub hub delete`",
    )
}

/// `RewindInstance`: Taskhub has no rewind (as its HTTP route answers).
pub(crate) fn rewind() -> Status {
    Status::unimplemented("rewind is not supported by Taskhub: restart the instance instead")
}
