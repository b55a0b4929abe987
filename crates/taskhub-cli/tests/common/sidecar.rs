//! A Durable Task gRPC client of the `taskhub` endpoint, as an SDK would use it.

use std::time::Duration;

use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::{GetInstanceRequest, OrchestrationState, OrchestrationStatus};

/// A client of the endpoint.
pub type Sidecar = TaskHubSidecarServiceClient<taskhub_grpc::tonic::transport::Channel>;

/// Waits (up to `timeout`, on the server) for `id` to finish; asserts it completed and returns
/// its state with inputs and outputs.
pub async fn completed_within(c: &mut Sidecar, id: &str, timeout: Duration) -> OrchestrationState {
    let mut request = taskhub_grpc::tonic::Request::new(GetInstanceRequest {
        instance_id: id.into(),
        get_inputs_and_outputs: true,
    });
    request.set_timeout(timeout);
    let done = c
        .wait_for_instance_completion(request)
        .await
        .unwrap_or_else(|e| panic!("{id} did not complete within {timeout:?}: {e}"))
        .into_inner()
        .orchestration_state
        .unwrap();
    assert_eq!(
        done.orchestration_status,
        OrchestrationStatus::Completed as i32,
        "{done:?}"
    );
    done
}
