//! An instance's stored history, read through the client.

use taskhub::*;

/// The history of `id`, which must exist.
pub async fn history_of(client: &TaskHubClient, id: &InstanceId) -> Vec<HistoryEvent> {
    client
        .get_status(id, StatusOptions { history: true })
        .await
        .unwrap()
        .unwrap()
        .history
        .unwrap()
}
