//! What one orchestration turn takes in and produces.

use crate::history::{CarriedEvent, EventKind, FailureDetails, HistoryEvent, ParentInstance, Tags};
use crate::ids::{ExecutionId, InstanceId, MessageId};
use crate::message::Message;
use crate::orchestration::state::LogRecord;
use crate::payload::Payload;
use crate::status::OrchestrationStatus;
use crate::time::Timestamp;

/// The input of one turn: the new messages for this instance, and the time of the turn.
#[derive(Debug, Clone)]
pub struct TurnInput {
    /// The turn's time (the runtime's clock); it becomes the orchestration's `now()`.
    pub now: Timestamp,
    /// New messages, in delivery order. An `ExecutionStarted` among them is applied first.
    pub messages: Vec<Message>,
}

/// A durable side effect the runtime must carry out after committing the turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Send an activity work item.
    ScheduleActivity {
        /// Task ID to report the result under.
        task_id: u64,
        /// Activity name.
        name: String,
        /// Activity version.
        version: Option<String>,
        /// Activity input.
        input: Payload,
        /// Attempt number under a retry policy.
        attempt: u32,
        /// The task's tags (empty: none).
        tags: Tags,
        /// The trace its work item carries (`None`: the turn's).
        traceparent: Option<String>,
    },
    /// Start a child orchestration.
    StartSubOrchestration {
        /// Task ID to report the result under.
        task_id: u64,
        /// Orchestration name.
        name: String,
        /// Orchestration version.
        version: Option<String>,
        /// The child's instance ID.
        instance_id: InstanceId,
        /// The child's input.
        input: Payload,
        /// Attempt number: 1, or the retry's under a failed attempt's task ID (remote code
        /// retries a sub-orchestration under its first attempt's task ID).
        attempt: u32,
        /// The child's tags (empty: none).
        tags: Tags,
        /// The trace its start carries (`None`: the turn's).
        traceparent: Option<String>,
    },
    /// Deliver `TimerFired` to this instance at `fire_at`.
    CreateTimer {
        /// Task ID of the timer.
        task_id: u64,
        /// When to fire.
        fire_at: Timestamp,
    },
    /// Raise an event on another instance.
    SendEvent {
        /// Position of the send among the orchestration's actions.
        task_id: u64,
        /// Target instance.
        instance_id: InstanceId,
        /// Event name.
        name: String,
        /// Event data.
        input: Payload,
        /// The task ID of this execution's previous send to the same instance, when it was
        /// sent within [`SEND_ORDER_WINDOW`](crate::entity::order::SEND_ORDER_WINDOW): an
        /// entity applies this event only after that one (see [`SendOrder`](crate::SendOrder)).
        after: Option<u64>,
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
    /// Start the next execution of this instance.
    ContinueAsNew {
        /// The next execution's ID.
        execution_id: ExecutionId,
        /// The next execution's input.
        input: Payload,
        /// The next execution's version (`None`: unchanged).
        version: Option<String>,
        /// External events to deliver to the next execution, in arrival order.
        carried_events: Vec<CarriedEvent>,
        /// The parent, if this is a sub-orchestration (the next execution reports to it).
        parent: Option<ParentInstance>,
        /// The most recently applied external event message IDs, for the next execution's
        /// de-duplication (its `ExecutionStarted`).
        applied_event_ids: Vec<MessageId>,
    },
    /// Tell the parent orchestration that this sub-orchestration finished.
    NotifyParent {
        /// The parent and its waiting task.
        parent: ParentInstance,
        /// `SubOrchestrationCompleted` or `SubOrchestrationFailed`.
        event: EventKind,
    },
}

impl Action {
    /// The history event that records this action in the turn that takes it
    /// (`TaskScheduled`, `SubOrchestrationCreated`, `TimerCreated` or `EventSent`); `None` for
    /// the actions that end an execution or notify its parent.
    #[must_use]
    pub fn recorded_event(&self) -> Option<EventKind> {
        Some(match self {
            Self::ScheduleActivity {
                task_id,
                name,
                version,
                input,
                attempt,
                tags,
                ..
            } => EventKind::TaskScheduled {
                task_id: *task_id,
                name: name.clone(),
                version: version.clone(),
                input: input.clone(),
                attempt: *attempt,
                tags: tags.clone(),
            },
            Self::StartSubOrchestration {
                task_id,
                name,
                version,
                instance_id,
                input,
                tags,
                ..
            } => EventKind::SubOrchestrationCreated {
                task_id: *task_id,
                name: name.clone(),
                version: version.clone(),
                instance_id: instance_id.clone(),
                input: input.clone(),
                tags: Box::new(tags.clone()),
            },
            Self::CreateTimer { task_id, fire_at } => EventKind::TimerCreated {
                task_id: *task_id,
                fire_at: *fire_at,
            },
            Self::SendEvent {
                task_id,
                instance_id,
                name,
                input,
                ..
            } => EventKind::EventSent {
                task_id: *task_id,
                instance_id: instance_id.clone(),
                name: name.clone(),
                input: input.clone(),
            },
            Self::Complete { .. }
            | Self::Fail { .. }
            | Self::ContinueAsNew { .. }
            | Self::NotifyParent { .. } => return None,
        })
    }

    /// The task ID of an action the code takes (scheduling, a timer, a send); `None` for the
    /// others.
    pub(crate) fn task_id(&self) -> Option<u64> {
        match self {
            Self::ScheduleActivity { task_id, .. }
            | Self::StartSubOrchestration { task_id, .. }
            | Self::CreateTimer { task_id, .. }
            | Self::SendEvent { task_id, .. } => Some(*task_id),
            Self::Complete { .. }
            | Self::Fail { .. }
            | Self::ContinueAsNew { .. }
            | Self::NotifyParent { .. } => None,
        }
    }

    /// How the code's action reads in a nondeterminism error: "scheduled activity 'Refund'".
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::ScheduleActivity { name, .. } => format!("scheduled activity '{name}'"),
            Self::StartSubOrchestration { name, .. } => {
                format!("started sub-orchestration '{name}'")
            }
            Self::CreateTimer { .. } => "created a timer".to_owned(),
            Self::SendEvent { name, .. } => format!("sent event '{name}'"),
            Self::Complete { .. } => "completed".to_owned(),
            Self::Fail { .. } => "failed".to_owned(),
            Self::ContinueAsNew { .. } => "continued as new".to_owned(),
            Self::NotifyParent { .. } => "notified its parent".to_owned(),
        }
    }
}

/// Why a message was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiscardReason {
    /// Already applied (same task completion or same message ID).
    Duplicate,
    /// Addressed to another execution of this instance.
    StaleExecution,
    /// The instance has finished; nothing more can be applied.
    InstanceFinished,
    /// The instance has not started yet: the runtime should deliver it again later.
    NotStarted,
    /// The execution continued as new and the next one has not started yet: the message is
    /// for the instance, not for the ended execution, and the runtime should deliver it again
    /// (after the next execution's start, which is already queued).
    AwaitingNextExecution,
    /// Not a message an orchestration can receive, or refers to a task that does not exist.
    Invalid,
}

/// A message the turn did not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    /// The message.
    pub message_id: MessageId,
    /// The reason class.
    pub reason: DiscardReason,
    /// A human-readable explanation.
    pub detail: String,
}

/// The result of one turn.
#[derive(Debug, Clone, Default)]
pub struct TurnResult {
    /// Events to append to history, in order (empty if nothing was applied).
    pub new_events: Vec<HistoryEvent>,
    /// Side effects to carry out once the events are committed.
    pub actions: Vec<Action>,
    /// The custom status, if the code set it during this turn.
    pub custom_status: Option<Payload>,
    /// Log lines written (not replayed) during this turn.
    pub logs: Vec<LogRecord>,
    /// Messages not applied.
    pub discarded: Vec<Discarded>,
    /// The instance's status after the turn.
    pub status: Option<OrchestrationStatus>,
}
