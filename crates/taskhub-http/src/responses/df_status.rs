//! The status of an instance and its history, as Durable Functions writes them, and the
//! purge count.

use std::collections::HashMap;

use serde::Serialize;
use taskhub::{EventKind, FailureDetails, HistoryEvent, InstanceRow, OrchestrationStatus, Payload};
use utoipa::ToSchema;

use super::JsonText;
use crate::isotime;

/// What a status response shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Show {
    /// Include the input.
    pub input: bool,
    /// Include the history.
    pub history: bool,
    /// Include results in the history.
    pub history_output: bool,
}

/// Why an instance failed (camelCase, in a status).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DfFailure {
    /// A short type name.
    pub error_type: String,
    /// The message.
    pub error_message: String,
    /// Further detail.
    pub error_details: Option<String>,
}

/// Why a task failed (PascalCase, in a history event).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct DfEventFailure {
    /// A short type name.
    pub error_type: String,
    /// The message.
    pub error_message: String,
    /// Further detail.
    pub error_details: Option<String>,
}

impl From<&FailureDetails> for DfEventFailure {
    fn from(f: &FailureDetails) -> Self {
        Self {
            error_type: f.error_type.clone(),
            error_message: f.message.clone(),
            error_details: f.details.clone(),
        }
    }
}

/// The status of one instance.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstanceStatus {
    /// The orchestration name.
    pub name: String,
    /// The instance ID.
    pub instance_id: String,
    /// `Pending`, `Running`, `Completed`, `Failed`, `Terminated`, `Suspended`, ...
    pub runtime_status: &'static str,
    /// The input (`null` with `showInput=false`).
    pub input: JsonText,
    /// The custom status.
    pub custom_status: JsonText,
    /// The output; for a failed instance its failure message; `null` while suspended.
    pub output: JsonText,
    /// Created (seconds precision).
    pub created_time: String,
    /// Last changed (seconds precision).
    pub last_updated_time: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_details: Option<DfFailure>,
    /// The history, with `showHistory=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_events: Option<Vec<DfHistoryEvent>>,
}

impl InstanceStatus {
    /// The status of `row`, with `history` if `show` asks for it.
    pub fn new(row: &InstanceRow, history: Option<&[HistoryEvent]>, show: Show) -> Self {
        let output = match row.status {
            OrchestrationStatus::Suspended => JsonText::null(),
            OrchestrationStatus::Failed => row
                .failure
                .as_ref()
                .map_or_else(JsonText::null, |f| JsonText::string(&f.message)),
            _ => JsonText::of_opt(row.output.as_ref()),
        };
        Self {
            name: row.name.clone(),
            instance_id: row.instance_id.as_str().to_owned(),
            runtime_status: row.status.as_str(),
            input: if show.input {
                JsonText::of(&row.input)
            } else {
                JsonText::null()
            },
            custom_status: JsonText::of_opt(row.custom_status.as_ref()),
            output,
            created_time: isotime::seconds(row.created_at),
            last_updated_time: isotime::seconds(row.updated_at),
            failure_details: row.failure.as_ref().map(|f| DfFailure {
                error_type: f.error_type.clone(),
                error_message: f.message.clone(),
                error_details: f.details.clone(),
            }),
            history_events: show.history.then(|| {
                history
                    .map(|h| DfHistoryEvent::list(h, show.history_output))
                    .unwrap_or_default()
            }),
        }
    }
}

/// One history event; which fields it has depends on `EventType`.
#[derive(Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct DfHistoryEvent {
    /// `ExecutionStarted`, `TaskCompleted`, `TimerFired`, ...
    pub event_type: &'static str,
    /// When it happened.
    pub timestamp: String,
    /// The activity or orchestration name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_name: Option<String>,
    /// When the task was scheduled (a completion folded with its scheduling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_time: Option<String>,
    /// A sub-orchestration's or an event's target instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The input (a termination: its reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<JsonText>,
    /// `Completed` or `Failed`, on `ExecutionCompleted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestration_status: Option<&'static str>,
    /// The result, with `showHistoryOutput=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonText>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_details: Option<DfEventFailure>,
    /// A timer's due time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fire_at: Option<String>,
    /// An event's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A suspension's, resumption's or rewind's reason (`null` without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub reason: Option<Option<String>>,
    /// On `ExecutionRewound` (Taskhub's extension): the task IDs the rewind dropped, which the
    /// code schedules again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewound_tasks: Option<Vec<u64>>,
}

/// Scheduled tasks by (sub-orchestration?, task ID): name and time.
type Scheduled = HashMap<(bool, u64), (String, String)>;

impl DfHistoryEvent {
    /// History as Durable Functions shows it: `OrchestratorStarted`/`Completed` left out, a
    /// scheduling event folded into its completion (`FunctionName`, `ScheduledTime`),
    /// results only with `show_output`.
    pub fn list(events: &[HistoryEvent], show_output: bool) -> Vec<Self> {
        let mut scheduled = Scheduled::new();
        events
            .iter()
            .filter_map(|e| Self::of(e, show_output, &mut scheduled))
            .collect()
    }

    fn of(e: &HistoryEvent, show_output: bool, scheduled: &mut Scheduled) -> Option<Self> {
        let ts = isotime::millis(e.timestamp);
        let result = |p: &Payload| show_output.then(|| JsonText::of(p));
        let mut m = Self::default();
        m.event_type = match &e.event {
            EventKind::OrchestratorStarted | EventKind::OrchestratorCompleted => return None,
            EventKind::TaskScheduled { task_id, name, .. } => {
                scheduled.insert((false, *task_id), (name.clone(), ts));
                return None;
            }
            EventKind::SubOrchestrationCreated {
                task_id,
                name,
                instance_id,
                ..
            } => {
                scheduled.insert((true, *task_id), (name.clone(), ts.clone()));
                m.function_name = Some(name.clone());
                m.instance_id = Some(instance_id.to_string());
                "SubOrchestrationInstanceCreated"
            }
            EventKind::ExecutionStarted { name, input, .. } => {
                m.function_name = Some(name.clone());
                m.input = Some(JsonText::of(input));
                "ExecutionStarted"
            }
            EventKind::ExecutionCompleted { result: r } => {
                m.orchestration_status = Some("Completed");
                m.result = result(r);
                "ExecutionCompleted"
            }
            EventKind::ExecutionFailed { failure } => {
                m.orchestration_status = Some("Failed");
                m.failure_details = Some(failure.into());
                "ExecutionCompleted"
            }
            EventKind::ExecutionTerminated { reason, .. } => {
                m.input = Some(JsonText::string(reason));
                "ExecutionTerminated"
            }
            EventKind::ContinuedAsNew { input, .. } => {
                m.input = Some(JsonText::of(input));
                "ContinueAsNew"
            }
            EventKind::TaskCompleted { task_id, result: r } => {
                take(&mut m, scheduled, (false, *task_id));
                m.result = result(r);
                "TaskCompleted"
            }
            EventKind::TaskFailed { task_id, failure } => {
                take(&mut m, scheduled, (false, *task_id));
                m.failure_details = Some(failure.into());
                "TaskFailed"
            }
            EventKind::SubOrchestrationCompleted { task_id, result: r } => {
                take(&mut m, scheduled, (true, *task_id));
                m.result = result(r);
                "SubOrchestrationInstanceCompleted"
            }
            EventKind::SubOrchestrationFailed { task_id, failure } => {
                take(&mut m, scheduled, (true, *task_id));
                m.failure_details = Some(failure.into());
                "SubOrchestrationInstanceFailed"
            }
            EventKind::TimerCreated { fire_at, .. } => {
                m.fire_at = Some(isotime::millis(*fire_at));
                "TimerCreated"
            }
            EventKind::TimerFired { fire_at, .. } => {
                m.fire_at = Some(isotime::millis(*fire_at));
                "TimerFired"
            }
            EventKind::EventRaised { name, input } => {
                m.name = Some(name.clone());
                m.result = result(input);
                "EventRaised"
            }
            EventKind::EventSent {
                name, instance_id, ..
            } => {
                m.name = Some(name.clone());
                m.instance_id = Some(instance_id.to_string());
                "EventSent"
            }
            EventKind::ExecutionSuspended { reason } => {
                m.reason = Some(reason.clone());
                "ExecutionSuspended"
            }
            EventKind::ExecutionResumed { reason } => {
                m.reason = Some(reason.clone());
                "ExecutionResumed"
            }
            EventKind::ExecutionRewound {
                reason,
                rewound_tasks,
            } => {
                m.reason = Some(reason.clone());
                m.rewound_tasks = Some(rewound_tasks.clone());
                "ExecutionRewound"
            }
            other => other.type_name(),
        };
        m.timestamp = ts;
        Some(m)
    }
}

/// Folds the scheduling of task `key` into its completion `m`.
fn take(m: &mut DfHistoryEvent, scheduled: &mut Scheduled, key: (bool, u64)) {
    if let Some((name, at)) = scheduled.remove(&key) {
        m.function_name = Some(name);
        m.scheduled_time = Some(at);
    }
}

/// How many instances a purge deleted.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Purged {
    /// The count.
    pub instances_deleted: u64,
}
