//! The worker's limits, as semaphores: the control-queue prefetch buffer
//! (`control_queue_buffer_threshold`), the orchestration turns running at once
//! (`max_concurrent_orchestrations`) and the activities (`max_concurrent_activities`).

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::settings::Settings;

/// The permits a step takes before it buffers a message, runs a turn or runs an activity.
pub(crate) struct Slots {
    /// Control-queue messages fetched and not yet finished, over all held partitions.
    pub buffer: Arc<Semaphore>,
    /// Orchestration turns running at once.
    pub orchestrations: Arc<Semaphore>,
    /// Activities running at once (and handed-over results waiting for their turn once
    /// [`results`](Self::results) is full).
    pub activities: Arc<Semaphore>,
    /// Handed-over activity results waiting for their turn, in KiB of their payloads (see
    /// [`WAITING_RESULTS_KIB`]): a result moves from its activity slot to these, so the
    /// activity slot runs the next work item at once.
    pub results: Arc<Semaphore>,
    /// Timer messages fetched ahead of their time and held until it (each gives its buffer
    /// slot back while it waits, so the buffer keeps fetching what is due).
    pub held_timers: Arc<Semaphore>,
}

/// The most timer messages a worker holds ahead of their time without a buffer slot: a clump
/// of timers falling due together does not stall the control queues, and memory stays bounded
/// (past it a held timer keeps its buffer slot).
pub(crate) const MAX_HELD_TIMERS: usize = 4_096;

/// How much of their payloads (KiB, at least one per result) the handed-over activity results
/// waiting for their turns may hold without an activity slot: 16 MiB. While results held
/// their activity slots, a burst of instances (2,000 `hello5` at once) filled all of them with
/// results waiting behind other instances' turns: new work items could not be claimed, went to
/// the shared queue and waited for its poller, tens of milliseconds per step. Memory stays
/// bounded in bytes: past it a result keeps its activity slot, and new work items wait as
/// before.
pub(crate) const WAITING_RESULTS_KIB: usize = 16 * 1024;

impl Slots {
    /// The limits of `settings`.
    pub(crate) fn new(settings: &Settings) -> Self {
        Self {
            buffer: Arc::new(Semaphore::new(settings.control_queue_buffer_threshold)),
            orchestrations: Arc::new(Semaphore::new(settings.max_concurrent_orchestrations)),
            activities: Arc::new(Semaphore::new(settings.max_concurrent_activities)),
            results: Arc::new(Semaphore::new(WAITING_RESULTS_KIB)),
            held_timers: Arc::new(Semaphore::new(MAX_HELD_TIMERS)),
        }
    }
}
