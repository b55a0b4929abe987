//! `StreamInstanceHistory`: the current execution's history in chunks.

use futures_util::stream;
use taskhub::{StatusOptions, TaskHubClient, TaskhubError};
use tonic::Status;

use super::fields;
use super::HistoryStream;
use crate::convert::event_to_proto;
use crate::error::status_of;
use crate::proto::{HistoryChunk, StreamInstanceHistoryRequest};

/// Events per chunk.
const CHUNK: usize = 100;

pub(crate) async fn stream_history(
    client: &TaskHubClient,
    r: StreamInstanceHistoryRequest,
) -> Result<HistoryStream, Status> {
    let id = fields::instance_id(&r.instance_id, "instanceId")?;
    let status = client
        .get_status(&id, StatusOptions { history: true })
        .await
        .map_err(|e| status_of(&e))?
        .ok_or_else(|| status_of(&TaskhubError::NotFound(id.clone())))?;
    // Taskhub keeps the history of the current execution only.
    if let Some(asked) = r.execution_id.as_deref().filter(|e| !e.is_empty()) {
        if asked != status.row.execution_id.as_str() {
            return Err(Status::not_found(format!(
                "executionId: instance '{id}' has no history of execution '{asked}' (Taskhub keeps the current execution's, '{}')",
                status.row.execution_id
            )));
        }
    }
    let events: Vec<_> = status
        .history
        .unwrap_or_default()
        .iter()
        .map(|e| event_to_proto(e, &id))
        .collect();
    let chunks: Vec<Result<HistoryChunk, Status>> = events
        .chunks(CHUNK)
        .map(|c| Ok(HistoryChunk { events: c.to_vec() }))
        .collect();
    Ok(Box::pin(stream::iter(chunks)))
}
