//! A Durable Task gRPC client of the `taskhub` endpoint, as an SDK would use it.

use std::time::Duration;

use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::{OrchestrationState, OrchestrationStatus};

use super::calls::{instance_request, within};

/// A client of the endpoint.
pub type Sidecar = TaskHubSidecarServiceClient<taskhub_grpc::tonic::transport::Channel>;

/// A client connected to the endpoint at `addr` (`HOST:PORT`).
pub async fn connect(addr: &str) -> Sidecar {
    TaskHubSidecarServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

/// Waits (up to `timeout`, on the server) for `id` to finish; asserts it completed and returns
/// its state with inputs and outputs.
pub async fn completed_within(c: &mut Sidecar, id: &str, timeout: Duration) -> OrchestrationState {
    let done = c
        .wait_for_instance_completion(within(instance_request(id, true), timeout))
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
