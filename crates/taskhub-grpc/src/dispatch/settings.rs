//! The dispatcher's settings.

use std::time::Duration;

/// How the [`Dispatcher`](super::Dispatcher) treats connected SDK workers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatcherSettings {
    /// How long a worker may hold an orchestration work item before it is taken back and the
    /// turn is retried (`ExecutorError::TimedOut`). Default 2 minutes: a turn only replays
    /// code, it does no I/O (and the runtime waits at most half the control queue's
    /// visibility timeout, 2.5 minutes by default, whatever this says).
    pub orchestration_timeout: Duration,
    /// How long a worker may hold an activity before it is taken back and retried. Default
    /// 30 minutes; raise it for longer activities.
    pub activity_timeout: Duration,
    /// How long a worker may hold an entity batch before it is taken back and the batch is
    /// retried. Default 2 minutes (the runtime waits at most half the control queue's
    /// visibility timeout, whatever this says).
    pub entity_timeout: Duration,
    /// How long a work item waits while no SDK worker is connected before the call answers
    /// `ExecutorError::Unavailable` (the runtime tries again later). Default 30 seconds.
    pub no_worker_wait: Duration,
    /// The orchestration work items a worker may hold when its `GetWorkItems` declares 0
    /// (or nothing). Default 100.
    pub default_orchestration_capacity: usize,
    /// The activity work items a worker may hold when it declares 0. Default 100.
    pub default_activity_capacity: usize,
    /// The entity batches a worker may hold when its `GetWorkItems` declares 0 (the Python
    /// SDK 1.12.0 declares nothing). Default 100.
    pub default_entity_capacity: usize,
    /// How often a health ping goes down each worker's stream (the Python SDK reconnects
    /// after 120 s of silence). Default 30 seconds.
    pub health_ping_interval: Duration,
    /// How often a work item may be given back (abandoned, or its worker went away with it)
    /// before its call answers `ExecutorError::Abandoned` and the runtime counts a failed
    /// delivery (poison handling). Default 5.
    pub give_back_limit: u32,
    /// How many bytes of encoded history the dispatcher keeps between an instance's turns,
    /// so that a turn encodes only the events that are new to it (the least recently used
    /// instances' go first past this; 0 keeps none and encodes every turn's history whole).
    /// Default 64 MiB.
    pub history_cache_bytes: usize,
}

impl Default for DispatcherSettings {
    fn default() -> Self {
        Self {
            orchestration_timeout: Duration::from_secs(2 * 60),
            activity_timeout: Duration::from_secs(30 * 60),
            entity_timeout: Duration::from_secs(2 * 60),
            no_worker_wait: Duration::from_secs(30),
            default_orchestration_capacity: 100,
            default_activity_capacity: 100,
            default_entity_capacity: 100,
            health_ping_interval: Duration::from_secs(30),
            give_back_limit: 5,
            history_cache_bytes: 64 * 1024 * 1024,
        }
    }
}
