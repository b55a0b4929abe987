//! The pure decision of a start: from the instance row read (if any), the start's options and
//! the time, what the start writes — the Pending row and the condition it is written under,
//! the `ExecutionStarted` message and its delay, and, replacing an active execution, the
//! terminate aimed at it — or that it keeps the instance, or refuses. No storage, no clock:
//! unit-tested on plain values (as `worker::orchestration::plan` is for turns).

use std::time::Duration;

use taskhub_core::{
    CoreError, EntityId, EventKind, ExecutionId, InstanceId, Message, OrchestrationStatus, Payload,
    Timestamp,
};
use taskhub_storage::{Expect, InstanceRow, StorageError};

use super::policy::OnExisting;
use super::StartOptions;
use crate::error::TaskhubError;

/// What a start is decided from, besides the row and the time.
pub(crate) struct StartRequest<'a> {
    /// The instance ID (chosen already: the options' or a random one).
    pub instance_id: &'a InstanceId,
    /// The orchestration name.
    pub name: &'a str,
    /// The input.
    pub input: &'a Payload,
    /// The options (their version resolved already).
    pub options: &'a StartOptions,
    /// The new execution's ID.
    pub execution_id: &'a ExecutionId,
    /// The partition of a new instance (its ID's under the hub's partition count); an existing
    /// instance keeps its own.
    pub new_partition: u32,
    /// The backend's longest message delay: a start further ahead comes early and goes round
    /// again until its time (`worker::orchestration::start_accept::early_start`).
    pub max_delay: Duration,
}

/// What a start does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StartPlan {
    /// Write the start (one checkpoint).
    Write(Box<StartWrite>),
    /// Start nothing: the instance exists and the policy keeps it.
    Keep,
}

/// The checkpoint of a start: every message goes to the control queue of the row's partition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartWrite {
    /// The Pending row of the new execution.
    pub row: InstanceRow,
    /// Written only if the stored row is still the one read (`Absent` if there was none).
    pub expect: Expect,
    /// The `ExecutionStarted` message.
    pub start: Message,
    /// How long the start message waits in its queue (its scheduled start, capped).
    pub delay: Duration,
    /// Replacing an active execution: the terminate aimed at that execution only, so that,
    /// applied after the new execution started, it is discarded as stale instead of ending it.
    pub terminate: Option<Message>,
}

/// Decides a start on `row`, the instance row read (`None`: no such instance), at `now`.
///
/// # Errors
/// `Invalid` for an ID reserved for entities (`@...`), `AlreadyExists` if the reuse policy
/// refuses the row, and a storage error for a stored row without an ETag.
pub(crate) fn plan_start(
    row: Option<&InstanceRow>,
    request: &StartRequest<'_>,
    now: Timestamp,
) -> Result<StartPlan, TaskhubError> {
    check_instance_id(request.instance_id)?;
    let (partition, expect, terminate) = match row {
        None => (request.new_partition, Expect::Absent, None),
        Some(row) => match request.options.reuse.on_existing(row.status) {
            OnExisting::Keep => return Ok(StartPlan::Keep),
            OnExisting::Refuse => {
                return Err(TaskhubError::AlreadyExists {
                    instance_id: request.instance_id.clone(),
                    status: row.status,
                })
            }
            OnExisting::Replace => {
                let etag = row
                    .etag
                    .clone()
                    .ok_or_else(|| StorageError::Backend("instance row without ETag".into()))?;
                let terminate = row.status.is_active().then(|| replaced(row, now));
                (row.partition, Expect::ETag(etag), terminate)
            }
        },
    };
    let scheduled_start = request.options.start_at.map(Timestamp::from_system_time);
    let mut start = start_message(&StartMessage {
        instance_id: request.instance_id,
        name: request.name,
        version: request.options.version.as_ref(),
        input: request.input,
        execution_id: request.execution_id,
        scheduled_start,
        partition,
        now,
    });
    start.traceparent = request.options.trace_parent.map(|t| t.traceparent());
    Ok(StartPlan::Write(Box::new(StartWrite {
        row: pending_row(request, partition, scheduled_start, now),
        expect,
        start,
        delay: start_delay(scheduled_start, now, request.max_delay),
        terminate,
    })))
}

/// Refuses an ID reserved for entities (`@name@key`).
fn check_instance_id(instance_id: &InstanceId) -> Result<(), TaskhubError> {
    if EntityId::is_entity_instance(instance_id) {
        return Err(TaskhubError::Invalid(CoreError::InvalidInstanceId {
            id: instance_id.to_string(),
            reason: "IDs starting with '@' are reserved for entities",
        }));
    }
    Ok(())
}

/// The terminate of the active execution of `row`, aimed at that execution only.
fn replaced(row: &InstanceRow, now: Timestamp) -> Message {
    let mut terminate = Message::from_client(
        row.instance_id.clone(),
        EventKind::ExecutionTerminated {
            reason: "replaced by a new start".into(),
            output: None,
        },
        now,
    );
    terminate.execution_id = Some(row.execution_id.clone());
    terminate.target_partition = Some(row.partition);
    terminate
}

/// The Pending row of the new execution.
fn pending_row(
    request: &StartRequest<'_>,
    partition: u32,
    scheduled_start: Option<Timestamp>,
    now: Timestamp,
) -> InstanceRow {
    InstanceRow {
        instance_id: request.instance_id.clone(),
        name: request.name.to_owned(),
        version: request.options.version.clone(),
        execution_id: request.execution_id.clone(),
        status: OrchestrationStatus::Pending,
        input: request.input.clone(),
        output: None,
        failure: None,
        custom_status: None,
        created_at: now,
        updated_at: now,
        completed_at: None,
        scheduled_start,
        partition,
        tags: request.options.tags.clone(),
        executions: Vec::new(),
        etag: None,
    }
}

/// What a client's `ExecutionStarted` carries.
pub(crate) struct StartMessage<'a> {
    /// The instance.
    pub instance_id: &'a InstanceId,
    /// The orchestration name.
    pub name: &'a str,
    /// The orchestration version.
    pub version: Option<&'a String>,
    /// The input.
    pub input: &'a Payload,
    /// The execution it starts.
    pub execution_id: &'a ExecutionId,
    /// Not to run before this time.
    pub scheduled_start: Option<Timestamp>,
    /// The instance's partition.
    pub partition: u32,
    /// The time it is sent.
    pub now: Timestamp,
}

/// A client's `ExecutionStarted` message (a start's, or a resume's before the first turn).
pub(crate) fn start_message(m: &StartMessage<'_>) -> Message {
    let mut start = Message::from_client(
        m.instance_id.clone(),
        EventKind::ExecutionStarted {
            name: m.name.to_owned(),
            version: m.version.cloned(),
            input: m.input.clone(),
            execution_id: m.execution_id.clone(),
            parent: None,
            scheduled_start: m.scheduled_start,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        m.now,
    );
    start.execution_id = Some(m.execution_id.clone());
    start.target_partition = Some(m.partition);
    start
}

/// How long a start for `scheduled_start` waits in its queue: until its time, at most
/// `max_delay` (a start further ahead comes early and goes round again).
pub(crate) fn start_delay(
    scheduled_start: Option<Timestamp>,
    now: Timestamp,
    max_delay: Duration,
) -> Duration {
    scheduled_start.map_or(Duration::ZERO, |at| at.saturating_since(now).min(max_delay))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
