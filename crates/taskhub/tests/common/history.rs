//! An instance's stored history, read through the client.

use taskhub::*;

/// The status of `id`, which must exist, with its history.
pub async fn with_history(client: &TaskHubClient, id: &InstanceId) -> InstanceStatus {
    client
        .get_status(id, StatusOptions { history: true })
        .await
        .unwrap()
        .unwrap()
}

/// The history of `id`, which must exist.
pub async fn history_of(client: &TaskHubClient, id: &InstanceId) -> Vec<HistoryEvent> {
    with_history(client, id).await.history.unwrap()
}
