//! Starting an instance and waiting for its end.

use std::time::Duration;

use serde::Serialize;
use taskhub::*;

/// Starts `name` on `input` as the instance `id`.
pub async fn start_as(
    client: &TaskHubClient,
    name: &str,
    id: &InstanceId,
    input: impl Serialize,
) -> InstanceId {
    let options = StartOptions {
        instance_id: Some(id.clone()),
        ..StartOptions::default()
    };
    client.start_with(name, input, options).await.unwrap()
}

/// Starts `name` on `input` and waits up to `bound` (on the hub's clock) for its end.
pub async fn run_to_end(
    client: &TaskHubClient,
    name: &str,
    input: impl Serialize,
    bound: Duration,
) -> InstanceStatus {
    let id = client.start(name, input).await.unwrap();
    wait_done(client, &id, bound).await
}

/// Starts `name` once on each of `inputs`, then waits up to `bound` (on the hub's clock) for
/// each to end; returns the instances in the order of `inputs`.
pub async fn run_each<T: Serialize>(
    client: &TaskHubClient,
    name: &str,
    inputs: impl IntoIterator<Item = T>,
    bound: Duration,
) -> Vec<InstanceId> {
    let mut ids = Vec::new();
    for input in inputs {
        ids.push(client.start(name, input).await.unwrap());
    }
    for id in &ids {
        wait_done(client, id, bound).await;
    }
    ids
}

/// Waits up to `bound` (on the hub's clock) for `id` to end.
pub async fn wait_done(client: &TaskHubClient, id: &InstanceId, bound: Duration) -> InstanceStatus {
    client.wait_for_completion(id, bound).await.unwrap()
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
    .unwrap_or_else(|_| panic!("timed out: {what}"))
    .unwrap()
}

/// Asserts that `s` completed with the output `want`, naming the instance (and its failure).
pub fn assert_completed_with(s: &InstanceStatus, want: u64) {
    let id = &s.row.instance_id;
    assert_eq!(
        s.status(),
        OrchestrationStatus::Completed,
        "{id}: {:?}",
        s.row.failure
    );
    assert_eq!(s.output::<u64>().unwrap(), Some(want), "{id}");
}
