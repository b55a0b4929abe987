//! Partition ownership for a single worker: claim every partition by bumping its epoch, so
//! checkpoints are fenced from the start (the lease manager of the scale-out issue builds on
//! this), and release them on shutdown.

use std::sync::PoisonError;

use taskhub_storage::{PartitionRow, StorageError};
use tracing::warn;

use super::Shared;
use crate::error::TaskhubError;

/// Claims every partition row; returns the partitions now owned.
pub(crate) async fn claim_all(shared: &Shared) -> Result<Vec<u32>, TaskhubError> {
    let store = shared.hub.store();
    let me = shared.hub.settings().worker_id.clone();
    let mut owned = Vec::new();
    for attempt in 0..5 {
        let rows: Vec<PartitionRow> = store
            .list_partitions()
            .await?
            .into_iter()
            .filter(|r| !owned.contains(&r.partition) && !r.offline && !r.retiring)
            .collect();
        let mut conflict = false;
        for row in rows {
            let claimed = PartitionRow {
                owner: Some(me.clone()),
                next_owner: None,
                epoch: row.epoch + 1,
                draining: false,
                updated_at: shared.hub.clock().now(),
                etag: None,
                ..row.clone()
            };
            match store.put_partition(&claimed, row.etag.as_ref()).await {
                Ok(_) => {
                    shared
                        .fences
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(row.partition, claimed.epoch);
                    owned.push(row.partition);
                }
                Err(StorageError::Conflict { .. }) => conflict = true,
                Err(e) => return Err(e.into()),
            }
        }
        if !conflict {
            break;
        }
        warn!(attempt, "partition row changed while claiming; retrying");
    }
    owned.sort_unstable();
    Ok(owned)
}

/// Releases every partition this worker owns, for immediate takeover.
pub(crate) async fn release_all(shared: &Shared) {
    let store = shared.hub.store();
    let me = shared.hub.settings().worker_id.as_str();
    let Ok(rows) = store.list_partitions().await else {
        return;
    };
    for row in rows.into_iter().filter(|r| r.owner.as_deref() == Some(me)) {
        let released = PartitionRow {
            owner: None,
            next_owner: None,
            draining: false,
            etag: None,
            ..row.clone()
        };
        if let Err(e) = store.put_partition(&released, row.etag.as_ref()).await {
            warn!(partition = row.partition, error = %e, "could not release partition");
        }
    }
}
