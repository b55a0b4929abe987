//! What a remote executor decided in one turn (the protocol's `OrchestratorAction`s, in
//! Taskhub's types). Task IDs are the executor's: each scheduling decision names the ID its
//! result is reported under, unique within the execution.

use crate::history::{CarriedEvent, FailureDetails, Tags};
use crate::ids::InstanceId;
use crate::payload::Payload;
use crate::time::Timestamp;

/// The answer to one turn a remote executor was asked to decide (the runtime's
/// `OrchestrationWork`); applied by [`OrchestrationSession::finish_turn`](crate::OrchestrationSession::finish_turn).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OrchestrationDecision {
    /// What the code did, in order.
    pub decisions: Vec<Decision>,
    /// The custom status the code set (`None`: unchanged).
    pub custom_status: Option<Payload>,
    /// The executor's span of the whole execution (an SDK's `orchestrationTraceContext`),
    /// given back with the execution's next turn (`None`: unchanged).
    pub span: Option<OrchestrationSpan>,
}

/// A remote executor's span of a whole execution (an SDK's `orchestrationTraceContext`):
/// kept by the session in memory and handed back with the execution's next turn, so that the
/// executor can emit one span for the orchestration. Best effort: a session loaded again
/// (after eviction, a restart or a move to another worker) has none until the executor gives
/// it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrchestrationSpan {
    /// The span's ID, as the executor sent it.
    pub span_id: String,
    /// When the span started, if the executor said.
    pub start: Option<Timestamp>,
}

impl OrchestrationDecision {
    /// A decision of `decisions` that leaves the custom status as it is.
    #[must_use]
    pub fn new(decisions: Vec<Decision>) -> Self {
        Self {
            decisions,
            custom_status: None,
            span: None,
        }
    }
}

/// One thing the code did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Schedule an activity.
    ScheduleActivity {
        /// The task ID its result is reported under.
        task_id: u64,
        /// The activity's name.
        name: String,
        /// Its version.
        version: Option<String>,
        /// Its input.
        input: Payload,
        /// Its tags (empty: none), recorded in `TaskScheduled` and given to the worker.
        tags: Tags,
        /// The W3C `traceparent` the activity's trace joins (an SDK's span that scheduled it);
        /// `None`: the turn's.
        traceparent: Option<String>,
    },
    /// Start a sub-orchestration.
    StartSubOrchestration {
        /// The task ID its result is reported under.
        task_id: u64,
        /// The orchestration's name.
        name: String,
        /// Its version.
        version: Option<String>,
        /// The child's instance ID.
        instance_id: InstanceId,
        /// Its input.
        input: Payload,
        /// The child's tags (empty: none).
        tags: Tags,
        /// The W3C `traceparent` the child's trace joins (an SDK's span that started it);
        /// `None`: the turn's.
        traceparent: Option<String>,
    },
    /// Create a durable timer.
    CreateTimer {
        /// The timer's task ID.
        task_id: u64,
        /// When it fires.
        fire_at: Timestamp,
    },
    /// Raise an event on another instance.
    SendEvent {
        /// The send's task ID.
        task_id: u64,
        /// The target instance.
        instance_id: InstanceId,
        /// The event's name.
        name: String,
        /// Its data.
        input: Payload,
    },
    /// The orchestration completed with this output.
    Complete {
        /// The output.
        result: Payload,
    },
    /// The orchestration failed.
    Fail {
        /// Why.
        failure: FailureDetails,
    },
    /// The orchestration ends itself as terminated (the protocol's `TERMINATED` completion).
    Terminate {
        /// The reason or output it gave.
        reason: Payload,
    },
    /// Start the next execution of this instance.
    ContinueAsNew {
        /// The next execution's input.
        input: Payload,
        /// The next execution's version (`None`: unchanged).
        version: Option<String>,
        /// Events the next execution receives first, in arrival order.
        carried_events: Vec<CarriedEvent>,
    },
}
