//! `QueryInstances` (filters and continuation-token paging) and `ListInstanceIds` (finished
//! instances by completion time, with a cursor).

use taskhub::{InstanceQuery, ListOrder, OrchestrationStatus, TaskHubClient};
use tonic::Status;

use super::fields;
use crate::convert::{state_to_proto, StateOptions};
use crate::error::status_of;
use crate::proto::{
    ListInstanceIdsRequest, ListInstanceIdsResponse, QueryInstancesRequest, QueryInstancesResponse,
};

/// A page's size when the call names none (the SDKs' default asks for 2³¹−1).
const DEFAULT_PAGE: usize = 100;
/// The largest page answered.
const MAX_PAGE: usize = 1000;

pub(crate) async fn query(
    client: &TaskHubClient,
    r: QueryInstancesRequest,
) -> Result<QueryInstancesResponse, Status> {
    let q = r.query.unwrap_or_default();
    let query = InstanceQuery {
        statuses: fields::statuses(&q.runtime_status, "query.runtimeStatus")?,
        created_from: fields::time(q.created_time_from.as_ref(), "query.createdTimeFrom")?,
        created_to: fields::time(q.created_time_to.as_ref(), "query.createdTimeTo")?,
        instance_id_prefix: q.instance_id_prefix.filter(|p| !p.is_empty()),
        order: ListOrder::OldestFirst,
        page_size: fields::page_size(q.max_instance_count, DEFAULT_PAGE, MAX_PAGE),
        continuation: q.continuation_token.filter(|t| !t.is_empty()),
        ..InstanceQuery::default()
    };
    // Only CANCELED asked for: nothing matches (an empty list would match everything).
    if query.statuses.is_empty() && !q.runtime_status.is_empty() {
        return Ok(QueryInstancesResponse::default());
    }
    let page = client.list(&query).await.map_err(|e| status_of(&e))?;
    let options = StateOptions {
        inputs_and_outputs: q.fetch_inputs_and_outputs,
    };
    Ok(QueryInstancesResponse {
        orchestration_state: page
            .instances
            .iter()
            .map(|row| state_to_proto(row, options))
            .collect(),
        continuation_token: page.continuation,
    })
}

pub(crate) async fn list_ids(
    client: &TaskHubClient,
    r: ListInstanceIdsRequest,
) -> Result<ListInstanceIdsResponse, Status> {
    let asked = fields::statuses(&r.runtime_status, "runtimeStatus")?;
    let finished = [
        OrchestrationStatus::Completed,
        OrchestrationStatus::Failed,
        OrchestrationStatus::Terminated,
    ];
    // Finished instances only: the statuses asked for among them (all of them if none).
    let statuses: Vec<_> = if r.runtime_status.is_empty() {
        finished.to_vec()
    } else {
        asked.into_iter().filter(|s| s.is_terminal()).collect()
    };
    if statuses.is_empty() {
        return Ok(ListInstanceIdsResponse::default());
    }
    let query = InstanceQuery {
        statuses,
        completed_from: fields::time(r.completed_time_from.as_ref(), "completedTimeFrom")?,
        completed_to: fields::time(r.completed_time_to.as_ref(), "completedTimeTo")?,
        page_size: fields::page_size(r.page_size, DEFAULT_PAGE, MAX_PAGE),
        continuation: r.last_instance_key.filter(|k| !k.is_empty()),
        ..InstanceQuery::default()
    };
    let page = client.list(&query).await.map_err(|e| status_of(&e))?;
    Ok(ListInstanceIdsResponse {
        instance_ids: page
            .instances
            .iter()
            .map(|row| row.instance_id.to_string())
            .collect(),
        last_instance_key: page.continuation,
    })
}
