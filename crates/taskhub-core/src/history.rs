//! History events: the event-sourced log of one orchestration execution.
//!
//! A [`HistoryEvent`] is a timestamp, the ID of the message that caused it (if any) and an
//! [`EventKind`]; how both are stored is [`format`](crate::format).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{ExecutionId, InstanceId, MessageId};
use crate::payload::Payload;
use crate::time::Timestamp;

/// Tags: string keys and values an instance or a scheduled task carries (an instance's are
/// set at its start; a task's by the code that schedules it, such as an SDK's
/// `ScheduleTaskAction.tags`). Written only when not empty.
pub type Tags = BTreeMap<String, String>;

/// One entry of an instance's history. Its position in the history is its sequence number,
/// which storage keeps as the row key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// When the event was recorded (the turn's time for events the engine creates).
    #[serde(rename = "ts")]
    pub timestamp: Timestamp,
    /// The message this event was applied from, if it came from a message. Used to apply a
    /// message at most once even when it is delivered again after a crash.
    #[serde(rename = "msg", default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
    /// The W3C trace context (`traceparent`) of the message an `ExecutionStarted` was applied
    /// from: the trace the execution's later turns join when the message that wakes them
    /// carries none (a client's event, terminate, suspend or resume). On a `TaskScheduled` or
    /// `SubOrchestrationCreated`: the context the code gave the work it started (an SDK's
    /// `parentTraceContext`), sent back to it with the history. `None` on other events.
    #[serde(rename = "tp", default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// What happened.
    pub event: EventKind,
}

impl HistoryEvent {
    /// An event recorded at `timestamp` that did not come from a message.
    #[must_use]
    pub fn new(timestamp: Timestamp, event: EventKind) -> Self {
        Self {
            timestamp,
            message_id: None,
            trace: None,
            event,
        }
    }
}

/// The instance that started a sub-orchestration, and the task waiting for its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentInstance {
    /// The parent's instance ID.
    pub instance_id: InstanceId,
    /// The parent's execution ID.
    pub execution_id: ExecutionId,
    /// The parent's task ID for the `SubOrchestrationCreated` event.
    pub task_id: u64,
    /// The parent's orchestration name (`None` in events written before it was recorded).
    /// A `Box<str>`, not a `String`: it keeps `EventKind` from growing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Box<str>>,
}

/// Why something failed, as the orchestration or a caller sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureDetails {
    /// A short type name: `ActivityFailed`, `NonDeterminism`, `OrchestrationNotFound`, ...
    pub error_type: String,
    /// The human-readable message, preserved verbatim from the failing code.
    pub message: String,
    /// Optional further detail (a serialized error, a backtrace, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// If true, a retry policy does not retry this failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub non_retryable: bool,
}

impl FailureDetails {
    /// A failure with a type and message and no details.
    #[must_use]
    pub fn new(error_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error_type: error_type.into(),
            message: message.into(),
            details: None,
            non_retryable: false,
        }
    }
}

impl std::fmt::Display for FailureDetails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error_type, self.message)
    }
}

/// An external event carried from one execution to the next by continue-as-new (or, in
/// `ContinuedAsNew::dropped_events`, one dropped by it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedEvent {
    /// The event name.
    pub name: String,
    /// The event data.
    pub input: Payload,
}

/// The kinds of history event. Task IDs correlate a scheduling event with its completion;
/// they are assigned in the order the orchestration code schedules work, starting at 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum EventKind {
    /// The first event of every execution.
    ExecutionStarted {
        /// Registered orchestration name.
        name: String,
        /// Orchestration version, if one was requested.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// The orchestration's input.
        input: Payload,
        /// The execution this event starts.
        execution_id: ExecutionId,
        /// Set when this is a sub-orchestration.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<ParentInstance>,
        /// Do not run before this time (a delayed start).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scheduled_start: Option<Timestamp>,
        /// After a continue-as-new: the message IDs of the external events the previous
        /// executions applied (the most recent, oldest first), so that a redelivered or
        /// retried event is not applied again by this one. Empty for a client's start.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        applied_event_ids: Vec<MessageId>,
        /// The tags a parent gave its sub-orchestration (an SDK's
        /// `CreateSubOrchestrationAction.tags`): the child's instance tags. Empty (and not
        /// written) otherwise: a client's start keeps its tags in the instance row, and a
        /// continue-as-new keeps the row's. Boxed: it keeps `EventKind` from growing.
        #[serde(default, skip_serializing_if = "Tags::is_empty")]
        tags: Box<Tags>,
    },
    /// The execution returned successfully.
    ExecutionCompleted {
        /// The orchestration's output.
        result: Payload,
    },
    /// The execution failed (an error returned by the code, a panic, nondeterminism, ...).
    ExecutionFailed {
        /// Why it failed.
        failure: FailureDetails,
    },
    /// The execution was terminated by a client.
    ExecutionTerminated {
        /// The reason given by the client.
        reason: String,
        /// The output the client gave, when it is more than a reason: an SDK's terminate
        /// `output` (any JSON, or an opaque payload), which becomes the instance's output as
        /// given. `None`: the output is the reason as a JSON string.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Payload>,
    },
    /// The execution ended by continuing as new; a new execution follows.
    ContinuedAsNew {
        /// The input of the next execution.
        input: Payload,
        /// The version of the next execution, if changed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// External events carried over to the next execution.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        carried_events: Vec<CarriedEvent>,
        /// External events that had arrived but were not consumed, dropped because the code
        /// asked for it (`preserve_unprocessed_events: false`): named here so that no event
        /// is ever dropped silently.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dropped_events: Vec<CarriedEvent>,
    },
    /// Start of one orchestration turn (episode); its timestamp is the orchestration's `now()`.
    OrchestratorStarted,
    /// End of one orchestration turn.
    OrchestratorCompleted,
    /// The orchestration scheduled an activity.
    TaskScheduled {
        /// Correlates with the completion.
        task_id: u64,
        /// Activity name.
        name: String,
        /// Activity version, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// Activity input.
        input: Payload,
        /// Attempt number under a retry policy (1 for the first attempt).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        attempt: u32,
        /// The tags the code gave the task (an SDK's `ScheduleTaskAction.tags`), passed to
        /// the worker that runs it; empty (and not written) when none, as in events written
        /// before tasks carried tags.
        #[serde(default, skip_serializing_if = "Tags::is_empty")]
        tags: Tags,
    },
    /// An activity returned successfully.
    TaskCompleted {
        /// The `TaskScheduled` this completes.
        task_id: u64,
        /// The activity's output.
        result: Payload,
    },
    /// An activity returned an error.
    TaskFailed {
        /// The `TaskScheduled` this completes.
        task_id: u64,
        /// The activity's error.
        failure: FailureDetails,
    },
    /// The orchestration started a sub-orchestration.
    SubOrchestrationCreated {
        /// Correlates with the completion.
        task_id: u64,
        /// Orchestration name.
        name: String,
        /// Orchestration version, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// The child's instance ID.
        instance_id: InstanceId,
        /// The child's input.
        input: Payload,
        /// The tags the code gave the child (an SDK's `CreateSubOrchestrationAction.tags`),
        /// sent back with the history; empty (and not written) when none, as in events
        /// written before they were kept. Boxed: it keeps `EventKind` from growing.
        #[serde(default, skip_serializing_if = "Tags::is_empty")]
        tags: Box<Tags>,
    },
    /// A sub-orchestration completed successfully.
    SubOrchestrationCompleted {
        /// The `SubOrchestrationCreated` this completes.
        task_id: u64,
        /// The child's output.
        result: Payload,
    },
    /// A sub-orchestration failed or was terminated.
    SubOrchestrationFailed {
        /// The `SubOrchestrationCreated` this completes.
        task_id: u64,
        /// Why the child failed.
        failure: FailureDetails,
    },
    /// The orchestration created a durable timer.
    TimerCreated {
        /// Correlates with `TimerFired`.
        task_id: u64,
        /// When the timer fires.
        fire_at: Timestamp,
    },
    /// A durable timer fired.
    TimerFired {
        /// The `TimerCreated` this completes.
        task_id: u64,
        /// When the timer was due.
        fire_at: Timestamp,
    },
    /// An external event arrived.
    EventRaised {
        /// The event name.
        name: String,
        /// The event data.
        input: Payload,
    },
    /// The orchestration sent an event to another instance.
    EventSent {
        /// Position of the send among the orchestration's actions.
        task_id: u64,
        /// Target instance.
        instance_id: InstanceId,
        /// Event name.
        name: String,
        /// Event data.
        input: Payload,
    },
    /// The instance was suspended; messages are recorded but not delivered until resumed.
    ExecutionSuspended {
        /// The reason given by the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The instance was resumed.
    ExecutionResumed {
        /// The reason given by the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A failed execution was rewound: recorded in place of what rewind dropped (see
    /// [`engine::rewind`](crate::engine::rewind)); the execution runs again from here. As a
    /// message (a client's or a parent's rewind request) `rewound_tasks` is empty.
    ExecutionRewound {
        /// The reason given by whoever asked for the rewind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The task IDs whose scheduling events the rewind dropped: the code schedules them
        /// again, and replay lets it (they are recorded again after this event).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rewound_tasks: Vec<u64>,
    },
}

fn one() -> u32 {
    1
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_one(v: &u32) -> bool {
    *v == 1
}

impl EventKind {
    /// The variant's name, as used in messages and error texts.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::ExecutionStarted { .. } => "ExecutionStarted",
            Self::ExecutionCompleted { .. } => "ExecutionCompleted",
            Self::ExecutionFailed { .. } => "ExecutionFailed",
            Self::ExecutionTerminated { .. } => "ExecutionTerminated",
            Self::ContinuedAsNew { .. } => "ContinuedAsNew",
            Self::OrchestratorStarted => "OrchestratorStarted",
            Self::OrchestratorCompleted => "OrchestratorCompleted",
            Self::TaskScheduled { .. } => "TaskScheduled",
            Self::TaskCompleted { .. } => "TaskCompleted",
            Self::TaskFailed { .. } => "TaskFailed",
            Self::SubOrchestrationCreated { .. } => "SubOrchestrationCreated",
            Self::SubOrchestrationCompleted { .. } => "SubOrchestrationCompleted",
            Self::SubOrchestrationFailed { .. } => "SubOrchestrationFailed",
            Self::TimerCreated { .. } => "TimerCreated",
            Self::TimerFired { .. } => "TimerFired",
            Self::EventRaised { .. } => "EventRaised",
            Self::EventSent { .. } => "EventSent",
            Self::ExecutionSuspended { .. } => "ExecutionSuspended",
            Self::ExecutionResumed { .. } => "ExecutionResumed",
            Self::ExecutionRewound { .. } => "ExecutionRewound",
        }
    }

    /// True for the events that end an execution.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::ExecutionCompleted { .. }
                | Self::ExecutionFailed { .. }
                | Self::ExecutionTerminated { .. }
                | Self::ContinuedAsNew { .. }
        )
    }

    /// A short description naming the event and its subject, for error messages:
    /// `TaskScheduled 'Charge'`, `TimerCreated`, `EventRaised 'approval'`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::TaskScheduled { name, .. }
            | Self::SubOrchestrationCreated { name, .. }
            | Self::EventRaised { name, .. }
            | Self::EventSent { name, .. }
            | Self::ExecutionStarted { name, .. } => format!("{} '{name}'", self.type_name()),
            _ => self.type_name().to_owned(),
        }
    }
}
