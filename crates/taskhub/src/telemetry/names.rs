//! The names of the metrics the runtime records (through the `metrics` facade), one constant
//! each. Every name starts with `taskhub_` and ends with its unit (`_total` for counters,
//! `_seconds` for durations and ages); `docs/OPERATIONS.md` has the table.

/// Counter: orchestration turns committed, by `orchestration` (name).
pub const TURNS: &str = "taskhub_orchestration_turns_total";
/// Counter: activity runs started, by `activity` (name).
pub const ACTIVITIES_STARTED: &str = "taskhub_activities_started_total";
/// Counter: activity runs that returned a result, by `activity`.
pub const ACTIVITIES_COMPLETED: &str = "taskhub_activities_completed_total";
/// Counter: activity runs that failed (an error, a panic, an unknown name), by `activity`.
pub const ACTIVITIES_FAILED: &str = "taskhub_activities_failed_total";
/// Histogram: how long an activity ran (measured on the hub's clock), by `activity`.
pub const ACTIVITY_DURATION: &str = "taskhub_activity_duration_seconds";
/// Histogram: how long a turn's checkpoint took to commit (retries included).
pub const CHECKPOINT_DURATION: &str = "taskhub_checkpoint_duration_seconds";
/// Gauge: messages in a queue (visible or not), by `queue` (`control-00`…, `workitems`);
/// sampled on each lease pass for the partitions the worker holds and the work-item queue.
pub const QUEUE_DEPTH: &str = "taskhub_queue_depth";
/// Gauge: age of the oldest message of a queue (0 when empty), by `queue`; sampled with
/// [`QUEUE_DEPTH`].
pub const QUEUE_OLDEST_AGE: &str = "taskhub_queue_oldest_message_age_seconds";
/// Gauge: partition leases this process's workers hold.
pub const LEASES_HELD: &str = "taskhub_partition_leases_held";
/// Counter: a worker began processing a partition under a new lease epoch (acquired,
/// taken over, or re-acquired after a fence), by `partition`.
pub const EPOCH_CHANGES: &str = "taskhub_partition_epoch_changes_total";
/// Counter: messages moved to the dead-letter store, by `queue`.
pub const DEAD_LETTERS: &str = "taskhub_dead_letters_total";
/// Counter: failed executions rewound (the rewind's checkpoint committed), by
/// `orchestration` (name).
pub const REWINDS: &str = "taskhub_rewinds_total";
/// Gauge: orchestration sessions held in memory (running or idle extended sessions).
pub const SESSIONS: &str = "taskhub_sessions_in_memory";
/// Counter: storage calls, by `operation` (recorded by
/// [`Instrumented`](taskhub_storage::Instrumented)).
pub const STORAGE_CALLS: &str = taskhub_storage::instrumented::STORAGE_CALLS;
/// Counter: storage calls that returned an error, by `operation`.
pub const STORAGE_ERRORS: &str = taskhub_storage::instrumented::STORAGE_ERRORS;

/// Every metric name, for documentation and tests.
pub const ALL: [&str; 15] = [
    TURNS,
    ACTIVITIES_STARTED,
    ACTIVITIES_COMPLETED,
    ACTIVITIES_FAILED,
    ACTIVITY_DURATION,
    CHECKPOINT_DURATION,
    QUEUE_DEPTH,
    QUEUE_OLDEST_AGE,
    LEASES_HELD,
    EPOCH_CHANGES,
    DEAD_LETTERS,
    REWINDS,
    SESSIONS,
    STORAGE_CALLS,
    STORAGE_ERRORS,
];

/// The histograms among [`ALL`] (an exporter gives them buckets in seconds).
pub const HISTOGRAMS: [&str; 2] = [ACTIVITY_DURATION, CHECKPOINT_DURATION];
