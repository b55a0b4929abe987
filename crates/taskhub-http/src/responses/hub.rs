//! The hub's identity and live statistics.

use serde::Serialize;
use utoipa::ToSchema;

/// The hub's name, backend and partition count, and what this process offers.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HubInfo {
    /// The task hub name.
    pub task_hub: String,
    /// `memory`, `sqlite` or `azure`.
    pub backend: String,
    /// Its partition count.
    pub partition_count: u32,
    /// True if a worker runs in this process.
    pub worker: bool,
    /// True if `/metrics` has a renderer.
    pub metrics: bool,
    /// Taskhub's version.
    pub version: &'static str,
}

/// The counters of the worker in this process.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerCounters {
    /// Turns committed.
    pub turns: u64,
    /// Activities run.
    pub activities: u64,
    /// Messages set aside as dead letters.
    pub dead_lettered: u64,
}

/// Queue depths now, the turns every worker has committed, and this process's counters.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Stats {
    /// The hub clock (Unix milliseconds).
    pub time_ms: u64,
    /// Messages in every control queue.
    pub control_queue_length: u64,
    /// Messages in the work-item queue.
    pub work_item_queue_length: u64,
    /// Age of the oldest control message.
    pub oldest_message_age_ms: Option<u64>,
    /// Turns committed by every worker (the sum over partitions).
    pub turns: u64,
    /// The worker in this process, if any.
    pub worker: Option<WorkerCounters>,
    /// The work this process holds for an SDK worker whose filters take it; `null` when it
    /// serves no SDK workers.
    pub unmatched: Option<super::UnmatchedView>,
}
