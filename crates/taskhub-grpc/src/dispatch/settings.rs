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
    /// The most work items (health pings included) that may wait unread on one worker's
    /// stream: a worker whose stream holds this many gets nothing more until it reads,
    /// whatever capacity it declared (its items go to other workers meanwhile). Default 1,000.
    pub stream_queue_items: usize,
    /// The most bytes of work items that may wait unread on one worker's stream (one item of
    /// any size still goes to a stream with nothing unread). Default 16 MiB.
    pub stream_queue_bytes: usize,
    /// How long a worker's stream may leave work items unread before it is closed
    /// (`UNAVAILABLE`) and the items it holds go to other workers at once. A live SDK reads
    /// its stream all the time (it buffers work itself), so this only catches a worker that
    /// stopped reading. Default 60 seconds: less than the turn timeout, so a stalled stream
    /// is closed before its items time out and are tried again.
    pub stream_read_timeout: Duration,
    /// The most actions one orchestration turn may answer with: past it the answer is not
    /// taken and the execution fails (`InvalidOrchestratorAction`, naming the cap), so one
    /// answer cannot make the runtime record and send an unbounded amount. Default 10,000 (a
    /// fan-out of thousands of activities in one turn is normal).
    pub max_actions_per_turn: usize,
    /// The most bytes of work items (their encoded requests: a turn's history, an activity's
    /// input) that may wait for an SDK worker at once, when none is connected or all are
    /// full: past it a new item is not queued but answered `ExecutorError::Unavailable` at
    /// once, and the runtime gives its work back to its queue to be tried again shortly (one
    /// item of any size is queued when none waits). Each waiting turn also holds its loaded
    /// history in the runtime, so this bounds that memory too. Default 64 MiB.
    pub waiting_bytes: usize,
    /// How long a work item may wait while SDK workers are connected but none has room for
    /// it before its call answers `ExecutorError::Busy`: the runtime gives the work back to
    /// its queue **uncounted** and tries again a few seconds later. Without it a turn queued
    /// behind a worker's long activity (a worker that runs one item at a time, or that
    /// declared little capacity) would pass the runtime's own limit for a decision (half the
    /// control queue's visibility timeout) and count as a failed delivery. Default 60 seconds
    /// (under that limit, 2.5 minutes by default, with room left for the turn itself).
    pub busy_wait: Duration,
    /// The most bytes of the parts of one chunked answer (`isPartial`, `chunkIndex`: a turn's
    /// answer an SDK sent in parts because it was over its chunk size, 4 MB by default): the
    /// parts are kept until the last comes; past it they are dropped and the part refused.
    /// Default 64 MiB.
    pub chunked_answer_bytes: usize,
    /// The largest orchestration work item (its request with the turn's history) a worker
    /// is sent whole. A larger one goes only to a worker that announced
    /// `WORKER_CAPABILITY_HISTORY_STREAMING` (the .NET SDK does), with
    /// `requiresHistoryStreaming` and no past events, which it reads with
    /// `StreamInstanceHistory`; while only workers that do not stream are connected, such a
    /// turn is refused at once (`ExecutorError::Abandoned`, naming the size), never sent to
    /// kill a stream. Default 4 MiB less 64 KiB: gRPC's default receive limit, which the SDKs
    /// keep, with room for the message's framing.
    pub inline_history_bytes: usize,
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
            stream_queue_items: 1_000,
            stream_queue_bytes: 16 * 1024 * 1024,
            stream_read_timeout: Duration::from_secs(60),
            max_actions_per_turn: 10_000,
            waiting_bytes: 64 * 1024 * 1024,
            busy_wait: Duration::from_secs(60),
            chunked_answer_bytes: 64 * 1024 * 1024,
            inline_history_bytes: 4 * 1024 * 1024 - 64 * 1024,
        }
    }
}

impl DispatcherSettings {
    /// The bounds of a chunked answer.
    pub(crate) fn chunk_limits(&self) -> super::chunks::ChunkLimits {
        super::chunks::ChunkLimits {
            actions: self.max_actions_per_turn,
            bytes: self.chunked_answer_bytes.max(1),
        }
    }

    /// The bounds of a worker's stream queue.
    pub(crate) fn stream_bounds(&self) -> super::queue::Bounds {
        super::queue::Bounds {
            items: self.stream_queue_items.max(1),
            bytes: self.stream_queue_bytes.max(1),
        }
    }
}
