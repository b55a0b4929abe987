//! `PurgeInstances`: one instance (with its sub-orchestrations when `recursive`), a batch of
//! instances, or every finished instance matching a filter within its timeout.

use std::time::Duration;

use taskhub::{InstanceId, InstanceQuery, TaskHubClient, TaskhubError};
use tonic::Status;

use super::{children, fields};
use crate::error::{invalid, status_of};
use crate::proto::purge_instances_request::Request as Which;
use crate::proto::{PurgeInstanceFilter, PurgeInstancesRequest, PurgeInstancesResponse};

/// The most instance IDs one batch may name (the protocol's limit).
const MAX_BATCH: usize = 500;

fn response(deleted: u64, complete: bool) -> PurgeInstancesResponse {
    PurgeInstancesResponse {
        deleted_instance_count: i32::try_from(deleted).unwrap_or(i32::MAX),
        // Always set: the Python SDK reads `.value`, and an absent one reads as false.
        is_complete: Some(complete),
    }
}

pub(crate) async fn purge(
    client: &TaskHubClient,
    r: PurgeInstancesRequest,
) -> Result<PurgeInstancesResponse, Status> {
    match r.request {
        Some(Which::InstanceId(id)) => {
            let id = fields::instance_id(&id, "instanceId")?;
            Ok(response(purge_one(client, &id, r.recursive).await?, true))
        }
        Some(Which::InstanceBatch(batch)) => {
            if batch.instance_ids.len() > MAX_BATCH {
                return Err(invalid(
                    "instanceBatch.instanceIds",
                    format!("at most {MAX_BATCH} IDs"),
                ));
            }
            let ids = batch
                .instance_ids
                .iter()
                .map(|id| fields::instance_id(id, "instanceBatch.instanceIds"))
                .collect::<Result<Vec<_>, _>>()?;
            let mut deleted = 0;
            for id in ids {
                // Active ones are skipped, as in a purge by filter.
                match purge_one(client, &id, r.recursive).await {
                    Ok(n) => deleted += n,
                    Err(s) if s.code() == tonic::Code::FailedPrecondition => {}
                    Err(s) => return Err(s),
                }
            }
            Ok(response(deleted, true))
        }
        Some(Which::PurgeInstanceFilter(filter)) => by_filter(client, filter).await,
        None => Err(invalid(
            "request",
            "one of instanceId, purgeInstanceFilter or instanceBatch is required",
        )),
    }
}

/// Purges a finished instance (and, `recursive`, its finished descendants); 0 if it does not
/// exist, `FAILED_PRECONDITION` if it is still active.
async fn purge_one(
    client: &TaskHubClient,
    id: &InstanceId,
    recursive: bool,
) -> Result<u64, Status> {
    let tree = if recursive {
        children::descendants(client, id)
            .await
            .map_err(|e| status_of(&e))?
    } else {
        Vec::new()
    };
    let mut deleted = u64::from(client.purge(id).await.map_err(|e| status_of(&e))?);
    for child in tree {
        match client.purge(&child).await {
            Ok(gone) => deleted += u64::from(gone),
            // A child still running is left alone.
            Err(TaskhubError::WrongStatus { .. }) => {}
            Err(e) => return Err(status_of(&e)),
        }
    }
    Ok(deleted)
}

async fn by_filter(
    client: &TaskHubClient,
    f: PurgeInstanceFilter,
) -> Result<PurgeInstancesResponse, Status> {
    let statuses = fields::statuses(&f.runtime_status, "purgeInstanceFilter.runtimeStatus")?;
    if statuses.is_empty() && !f.runtime_status.is_empty() {
        return Ok(response(0, true));
    }
    let budget = match f.timeout {
        None => Duration::MAX,
        Some(d) => Duration::try_from(d)
            .map_err(|_| invalid("purgeInstanceFilter.timeout", "must not be negative"))?,
    };
    let query = InstanceQuery {
        statuses,
        created_from: fields::time(
            f.created_time_from.as_ref(),
            "purgeInstanceFilter.createdTimeFrom",
        )?,
        created_to: fields::time(
            f.created_time_to.as_ref(),
            "purgeInstanceFilter.createdTimeTo",
        )?,
        page_size: 100,
        ..InstanceQuery::default()
    };
    let outcome = client
        .purge_where_within(&query, budget)
        .await
        .map_err(|e| status_of(&e))?;
    Ok(response(outcome.purged, outcome.finished))
}
