//! The sub-orchestrations an instance started, read from its history: what a recursive
//! terminate or purge also reaches. The runtime's client has no recursive terminate or purge,
//! so the endpoint walks the tree itself, at the time of the call: a child that a turn in
//! flight is creating right now is not seen.

use std::collections::HashSet;

use taskhub::{EventKind, InstanceId, StatusOptions, TaskHubClient, TaskhubError};

/// How many instances one recursive call visits at most (a guard against a runaway tree).
const MAX_TREE: usize = 10_000;

/// The instance's descendants (children, their children, ...), parents before children,
/// each once; `id` itself is not included.
pub(crate) async fn descendants(
    client: &TaskHubClient,
    id: &InstanceId,
) -> Result<Vec<InstanceId>, TaskhubError> {
    let mut seen: HashSet<InstanceId> = HashSet::from([id.clone()]);
    let mut order = Vec::new();
    let mut next = vec![id.clone()];
    while let Some(parent) = next.pop() {
        let Some(status) = client
            .get_status(&parent, StatusOptions { history: true })
            .await?
        else {
            continue;
        };
        for event in status.history.unwrap_or_default() {
            if let EventKind::SubOrchestrationCreated { instance_id, .. } = event.event {
                if order.len() < MAX_TREE && seen.insert(instance_id.clone()) {
                    order.push(instance_id.clone());
                    next.push(instance_id);
                }
            }
        }
    }
    Ok(order)
}
