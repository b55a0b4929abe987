//! Partitions, their manual control, workers (and barring them), and the scale
//! recommendation.

use std::time::Duration;

use serde::Serialize;
use taskhub::admin::{PartitionStatus, ScaleAction, ScaleRecommendation, UnmatchedWork};
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

/// A name (and version) that work waits for an SDK worker to take.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UnmatchedNameView {
    /// `orchestration`, `activity` or `entity`.
    pub kind: &'static str,
    /// The orchestration's or activity's name, or the entity's (`name` of `@name@key`).
    pub name: String,
    /// Its version, if any.
    pub version: Option<String>,
    /// How many items of it wait.
    pub items: usize,
}

/// The work items this process holds because none of the connected SDK workers' work-item
/// filters take them (every waiting one while no SDK worker is connected): they wait, Pending,
/// for a worker whose filters do.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UnmatchedView {
    /// SDK workers connected now.
    pub workers: usize,
    /// Orchestration turns waiting.
    pub orchestrations: usize,
    /// Activities waiting.
    pub activities: usize,
    /// Entity batches waiting.
    pub entities: usize,
    /// What they wait for, most items first (at most 20).
    pub names: Vec<UnmatchedNameView>,
    /// How many more names wait than `names` lists.
    pub omitted: usize,
}

impl From<UnmatchedWork> for UnmatchedView {
    fn from(w: UnmatchedWork) -> Self {
        Self {
            workers: w.workers,
            orchestrations: w.orchestrations,
            activities: w.activities,
            entities: w.entities,
            names: w
                .names
                .into_iter()
                .map(|n| UnmatchedNameView {
                    kind: n.kind.as_str(),
                    name: n.name,
                    version: n.version,
                    items: n.items,
                })
                .collect(),
            omitted: w.omitted,
        }
    }
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
    /// The work waiting for an SDK worker whose filters take it (the sample that saw the
    /// most); `null` when this process serves no SDK workers (`taskhub serve`, or a worker
    /// without `--grpc`) and so cannot know.
    pub unmatched: Option<UnmatchedView>,
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
            unmatched: r.unmatched.map(UnmatchedView::from),
        }
    }
}
