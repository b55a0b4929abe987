//! Partitions, their manual control, workers (and barring them), and the scale
//! recommendation.

use std::time::Duration;

use serde::Serialize;
use taskhub::admin::{PartitionStatus, ScaleAction, ScaleRecommendation};
use taskhub_storage::PartitionRow;
use utoipa::ToSchema;

use crate::isotime;

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `retiring`, `offline`, `draining`, `owned` or `free`.
fn state_of(r: &PartitionRow) -> &'static str {
    if r.retiring {
        "retiring"
    } else if r.offline {
        "offline"
    } else if r.draining {
        "draining"
    } else if r.owner.is_some() {
        "owned"
    } else {
        "free"
    }
}

/// One partition.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartitionView {
    /// Its number.
    pub partition: u32,
    /// The worker that holds it.
    pub owner: Option<String>,
    /// The worker it is being handed to.
    pub next_owner: Option<String>,
    /// The lease epoch.
    pub epoch: u64,
    /// `retiring`, `offline`, `draining`, `owned` or `free`.
    pub state: &'static str,
    /// Messages in its control queue.
    pub queue_length: u64,
    /// Age of the oldest of them.
    pub oldest_message_age_ms: Option<u64>,
    /// Since the lease was last renewed.
    pub lease_age_ms: u64,
    /// When the row last changed.
    pub updated_time: String,
    /// Turns committed on it.
    pub turns: u64,
}

impl From<&PartitionStatus> for PartitionView {
    fn from(p: &PartitionStatus) -> Self {
        Self {
            partition: p.row.partition,
            owner: p.row.owner.clone(),
            next_owner: p.row.next_owner.clone(),
            epoch: p.row.epoch,
            state: state_of(&p.row),
            queue_length: p.queue_length,
            oldest_message_age_ms: p.oldest_message_age.map(ms),
            lease_age_ms: ms(p.lease_age),
            updated_time: isotime::millis(p.row.updated_at),
            turns: p.row.turns,
        }
    }
}

/// A partition after bump, offline or online.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartitionChanged {
    /// Its number.
    pub partition: u32,
    /// The worker that holds it.
    pub owner: Option<String>,
    /// The worker it is being handed to.
    pub next_owner: Option<String>,
    /// The lease epoch.
    pub epoch: u64,
    /// True if offline.
    pub offline: bool,
}

impl From<&PartitionRow> for PartitionChanged {
    fn from(row: &PartitionRow) -> Self {
        Self {
            partition: row.partition,
            owner: row.owner.clone(),
            next_owner: row.next_owner.clone(),
            epoch: row.epoch,
            offline: row.offline,
        }
    }
}

/// A worker and the partitions it holds.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WorkerView {
    /// Its name.
    pub name: String,
    /// The partitions it holds.
    pub partitions: Vec<u32>,
    /// True if barred.
    pub prohibited: bool,
}

/// The workers that hold partitions (with them) and the barred ones.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Workers {
    /// Every worker that holds partitions or is barred.
    pub workers: Vec<WorkerView>,
    /// The barred workers.
    pub prohibited: Vec<String>,
}

/// The barred workers after a change.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Prohibited {
    /// Their names.
    pub prohibited: Vec<String>,
}

/// One reading of one queue.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueSampleView {
    /// `control-00` … or `workitems`.
    pub queue: String,
    /// Messages, visible or not.
    pub length: u64,
    /// Age of the oldest message in milliseconds.
    pub oldest_age_ms: Option<u64>,
}

/// The scale recommendation (snake_case, as the autoscaler reads it).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Scale {
    /// Workers that hold partitions now.
    pub current_workers: usize,
    /// The worker count to run.
    pub recommended_workers: usize,
    /// `scale_out`, `scale_in` or `none`.
    pub action: &'static str,
    /// Why, in words.
    pub reason: String,
    /// The last sample of each queue.
    pub queues: Vec<QueueSampleView>,
}

impl From<ScaleRecommendation> for Scale {
    fn from(r: ScaleRecommendation) -> Self {
        Self {
            current_workers: r.current_workers,
            recommended_workers: r.recommended_workers,
            action: match r.action {
                ScaleAction::ScaleOut => "scale_out",
                ScaleAction::ScaleIn => "scale_in",
                ScaleAction::None => "none",
            },
            reason: r.reason,
            queues: r
                .queues
                .into_iter()
                .map(|q| QueueSampleView {
                    queue: q.queue,
                    length: q.length,
                    oldest_age_ms: q.oldest_age_ms,
                })
                .collect(),
        }
    }
}
