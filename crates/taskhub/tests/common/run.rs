//! Starting an instance and waiting for its end.

use std::time::Duration;

use serde::Serialize;
use taskhub::*;

/// Starts `name` on `input` and waits up to `bound` (on the hub's clock) for its end.
pub async fn run_to_end(
    client: &TaskHubClient,
    name: &str,
    input: impl Serialize,
    bound: Duration,
) -> InstanceStatus {
    let id = client.start(name, input).await.unwrap();
    client.wait_for_completion(&id, bound).await.unwrap()
}

/// Waits up to `bound` of real time for `id` to end, whatever the hub's clock says (it may be
/// a manual one that the test moves on); panics naming `what` if it does not.
pub async fn completes_within(
    client: &TaskHubClient,
    id: &InstanceId,
    bound: Duration,
    what: &str,
) -> InstanceStatus {
    tokio::time::timeout(
        bound,
        client.wait_for_completion(id, Duration::from_secs(3600)),
    )
    .await
    .unwrap_or_else(|_| panic!("timed out waiting until {what}"))
    .unwrap()
}
