//! The worker's counters, read with `WorkerHandle::stats`.

/// Counters a worker keeps (read with [`WorkerHandle::stats`](crate::WorkerHandle::stats)).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerStats {
    /// Orchestration turns committed.
    pub turns: u64,
    /// Activities executed.
    pub activities: u64,
    /// Messages moved to the dead-letter store.
    pub dead_lettered: u64,
    /// Messages discarded as duplicates or stale.
    pub discarded: u64,
    /// Checkpoints rejected (conflict, fenced) and retried by redelivery.
    pub checkpoint_conflicts: u64,
    /// Idle extended sessions that left memory early to stay within `max_extended_sessions`.
    pub sessions_evicted: u64,
    /// Entity batches committed (each one checkpoint, plus one to send its messages on a
    /// backend without atomic checkpoints).
    pub entity_batches: u64,
    /// Entity operations run (failed ones included).
    pub entity_operations: u64,
    /// Copies of a work item this worker ran or runs (same message ID: a torn checkpoint's
    /// outbox re-sent), deleted without running.
    pub work_item_copies_dropped: u64,
    /// Messages of torn checkpoints' outboxes not sent again: their originals or, for work
    /// items, their results were seen (delivered or in the history).
    pub outbox_messages_left_out: u64,
}
