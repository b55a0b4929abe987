//! Instances as the dashboard shows them: a row, a page of rows, one instance with its
//! family, history and timeline, and one execution.

use std::collections::BTreeMap;

use serde::Serialize;
use taskhub::{ExecutionStatus, FailureDetails, InstanceRow, OrchestrationStatus, Timestamp};
use utoipa::ToSchema;

use super::JsonText;
use crate::isotime;
use crate::timeline::TimelineItem;

/// Why an instance or execution failed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Failure {
    /// A short type name.
    pub error_type: String,
    /// The message.
    pub message: String,
    /// Further detail.
    pub details: Option<String>,
}

impl From<&FailureDetails> for Failure {
    fn from(f: &FailureDetails) -> Self {
        Self {
            error_type: f.error_type.clone(),
            message: f.message.clone(),
            details: f.details.clone(),
        }
    }
}

/// An execution that ended by continue-as-new.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PreviousExecution {
    /// Its ID.
    pub execution_id: String,
    /// How it ended.
    pub runtime_status: &'static str,
    /// When it ended.
    pub completed_time: String,
}

/// One instance row.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstanceView {
    /// The instance ID.
    pub instance_id: String,
    /// The orchestration name.
    pub name: String,
    /// The orchestration version.
    pub version: Option<String>,
    /// The current execution.
    pub execution_id: String,
    /// `Pending`, `Running`, `Completed`, ...
    pub runtime_status: &'static str,
    /// The input.
    pub input: JsonText,
    /// The output (`null` while suspended or running).
    pub output: JsonText,
    /// Why it is suspended.
    pub suspend_reason: Option<String>,
    /// Why it failed.
    pub failure: Option<Failure>,
    /// The custom status.
    pub custom_status: JsonText,
    /// Created.
    pub created_time: String,
    /// Last changed.
    pub last_updated_time: String,
    /// Finished.
    pub completed_time: Option<String>,
    /// When a scheduled start is due.
    pub scheduled_start_time: Option<String>,
    /// Its partition.
    pub partition: u32,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// Executions that ended by continue-as-new.
    pub previous_executions: Vec<PreviousExecution>,
}

fn opt_time(t: Option<Timestamp>) -> Option<String> {
    t.map(isotime::millis)
}

impl From<&InstanceRow> for InstanceView {
    fn from(row: &InstanceRow) -> Self {
        Self {
            instance_id: row.instance_id.as_str().to_owned(),
            name: row.name.clone(),
            version: row.version.clone(),
            execution_id: row.execution_id.as_str().to_owned(),
            runtime_status: row.status.as_str(),
            input: JsonText::of(&row.input),
            output: if row.status == OrchestrationStatus::Suspended {
                JsonText::null()
            } else {
                JsonText::of_opt(row.output.as_ref())
            },
            suspend_reason: taskhub::client::suspend_reason(row),
            failure: row.failure.as_ref().map(Failure::from),
            custom_status: JsonText::of_opt(row.custom_status.as_ref()),
            created_time: isotime::millis(row.created_at),
            last_updated_time: isotime::millis(row.updated_at),
            completed_time: opt_time(row.completed_at),
            scheduled_start_time: opt_time(row.scheduled_start),
            partition: row.partition,
            tags: row.tags.clone(),
            previous_executions: row
                .executions
                .iter()
                .map(|e| PreviousExecution {
                    execution_id: e.execution_id.as_str().to_owned(),
                    runtime_status: e.status.as_str(),
                    completed_time: isotime::millis(e.completed_at),
                })
                .collect(),
        }
    }
}

/// A page of instances.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstancePage {
    /// The rows.
    pub instances: Vec<InstanceView>,
    /// The next page's token; `null` on the last page.
    pub continuation_token: Option<String>,
}

/// The parent of a sub-orchestration.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Parent {
    /// The parent instance.
    pub instance_id: String,
    /// Its execution.
    pub execution_id: String,
    /// The task ID of the call.
    pub task_id: u64,
}

/// A sub-orchestration an instance started.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Child {
    /// Its instance ID.
    pub instance_id: String,
    /// Its orchestration name.
    pub name: String,
    /// The task ID of the call.
    pub task_id: u64,
}

/// One history event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistoryItem {
    /// Its position in the history.
    pub seq: usize,
    /// When it happened.
    pub time: String,
    /// `ExecutionStarted`, `TaskScheduled`, ...
    pub event_type: String,
    /// The event's own fields.
    #[schema(value_type = Object)]
    pub fields: serde_json::Value,
}

/// One instance with its family, history and timeline.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct InstanceDetail {
    /// The row.
    pub instance: InstanceView,
    /// The parent, for a sub-orchestration.
    pub parent: Option<Parent>,
    /// The sub-orchestrations it started.
    pub children: Vec<Child>,
    /// The current execution's history.
    pub history: Vec<HistoryItem>,
    /// Its activities, timers and sub-orchestrations over time.
    pub timeline: Vec<TimelineItem>,
}

/// One execution of an instance.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionView {
    /// The instance ID.
    pub instance_id: String,
    /// The execution ID.
    pub execution_id: String,
    /// The orchestration name.
    pub name: String,
    /// Its status.
    pub runtime_status: &'static str,
    /// True for the instance's current execution.
    pub current: bool,
    /// Its input.
    pub input: JsonText,
    /// Its output.
    pub output: JsonText,
    /// Why it failed.
    pub failure: Option<Failure>,
    /// Its custom status.
    pub custom_status: JsonText,
    /// Started.
    pub started_time: String,
    /// Finished.
    pub completed_time: Option<String>,
}

impl From<&ExecutionStatus> for ExecutionView {
    fn from(e: &ExecutionStatus) -> Self {
        Self {
            instance_id: e.instance_id.as_str().to_owned(),
            execution_id: e.execution_id.as_str().to_owned(),
            name: e.name.clone(),
            runtime_status: e.status.as_str(),
            current: e.current,
            input: JsonText::of(&e.input),
            output: JsonText::of_opt(e.output.as_ref()),
            failure: e.failure.as_ref().map(Failure::from),
            custom_status: JsonText::of_opt(e.custom_status.as_ref()),
            started_time: isotime::millis(e.started_at),
            completed_time: opt_time(e.completed_at),
        }
    }
}
