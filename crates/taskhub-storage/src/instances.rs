//! The instances table: one status row per instance (the read side).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use taskhub_core::{
    ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload, Timestamp,
};

use crate::error::StorageResult;
use crate::history::ETag;
use crate::list_order::ListOrder;

/// An instance's tags: string keys and values set at its start (see the runtime's
/// `StartOptions::tags` for their limits), kept across continue-as-new.
pub type Tags = taskhub_core::Tags;

/// The most [`ExecutionRecord`]s an instance row keeps (the oldest go first).
pub const MAX_EXECUTION_RECORDS: usize = 32;

/// A compact record of an execution that ended by continue-as-new, kept in the instance row
/// after its history was replaced by the next execution's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// The execution.
    pub execution_id: ExecutionId,
    /// How it ended (`ContinuedAsNew`).
    pub status: OrchestrationStatus,
    /// Its input.
    pub input: Payload,
    /// Its output: the input it passed to the next execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Payload>,
    /// Its failure, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureDetails>,
    /// Its custom status when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_status: Option<Payload>,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended.
    pub completed_at: Timestamp,
}

/// The status row of an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRow {
    /// The instance.
    pub instance_id: InstanceId,
    /// Orchestration name.
    pub name: String,
    /// Orchestration version.
    pub version: Option<String>,
    /// Current execution.
    pub execution_id: ExecutionId,
    /// Runtime status.
    pub status: OrchestrationStatus,
    /// Input of the current execution.
    pub input: Payload,
    /// Output, once completed.
    pub output: Option<Payload>,
    /// Failure, once failed.
    pub failure: Option<FailureDetails>,
    /// Custom status set by the orchestration.
    pub custom_status: Option<Payload>,
    /// When the instance was created (first start or restart).
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When it reached a terminal status.
    pub completed_at: Option<Timestamp>,
    /// Delayed start, if any.
    pub scheduled_start: Option<Timestamp>,
    /// The partition the instance lives on (fixed at creation, so changing the partition
    /// count never strands it).
    pub partition: u32,
    /// Tags set at the start, kept across continue-as-new.
    pub tags: Tags,
    /// The executions before the current one that ended by continue-as-new, oldest first (at
    /// most [`MAX_EXECUTION_RECORDS`]).
    pub executions: Vec<ExecutionRecord>,
    /// The row's version; ignored on write (the store sets it).
    pub etag: Option<ETag>,
}

impl InstanceRow {
    /// The row of execution `execution_id` of instance `instance_id` (orchestration `name`),
    /// `Pending` with no input, created and updated at `at`, on partition 0, with nothing
    /// else set: what a caller does not set with struct update syntax
    /// (`InstanceRow { status, ..InstanceRow::new(…) }`).
    #[must_use]
    pub fn new(
        instance_id: InstanceId,
        name: impl Into<String>,
        execution_id: ExecutionId,
        at: Timestamp,
    ) -> Self {
        Self {
            instance_id,
            name: name.into(),
            version: None,
            execution_id,
            status: OrchestrationStatus::Pending,
            input: Payload::null(),
            output: None,
            failure: None,
            custom_status: None,
            created_at: at,
            updated_at: at,
            completed_at: None,
            scheduled_start: None,
            partition: 0,
            tags: Tags::default(),
            executions: Vec::new(),
            etag: None,
        }
    }
}

/// The condition of a conditional instance-row write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Write unconditionally.
    Any,
    /// The row must not exist (create).
    Absent,
    /// The row must exist with this ETag.
    ETag(ETag),
    /// The row must not exist, or be a Pending row of this execution: the first turn of an
    /// execution whose row the worker did not find (a sub-orchestration's first turn, a start
    /// taken before the client's Pending row landed) may replace the client's Pending row of
    /// the same execution, but never a row that is further along (a newer owner's Running or
    /// Completed row), which a stale writer resumed after its lease moved would otherwise
    /// overwrite.
    AbsentOrPending(ExecutionId),
}

impl Expect {
    /// True if a stored row (`None`: no row) meets this condition.
    #[must_use]
    pub fn allows(&self, stored: Option<&InstanceRow>) -> bool {
        match (self, stored) {
            (Self::Any, _) | (Self::Absent | Self::AbsentOrPending(_), None) => true,
            (Self::ETag(expected), Some(row)) => row.etag.as_ref() == Some(expected),
            (Self::AbsentOrPending(execution), Some(row)) => {
                row.status == OrchestrationStatus::Pending && row.execution_id == *execution
            }
            _ => false,
        }
    }
}

/// Filters and paging for [`InstanceStore::list_instances`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceQuery {
    /// Only these statuses (empty = all).
    pub statuses: Vec<OrchestrationStatus>,
    /// Only this orchestration name.
    pub name: Option<String>,
    /// Only instances created at or after this time.
    pub created_from: Option<Timestamp>,
    /// Only instances created before this time.
    pub created_to: Option<Timestamp>,
    /// Only instances that reached a terminal status at or after this time (so only finished
    /// ones).
    pub completed_from: Option<Timestamp>,
    /// Only instances that reached a terminal status before this time (so only finished ones).
    pub completed_to: Option<Timestamp>,
    /// Only instances whose row last changed at or after this time.
    pub updated_from: Option<Timestamp>,
    /// Only instances whose row last changed before this time.
    pub updated_to: Option<Timestamp>,
    /// Only instance IDs starting with this prefix.
    pub instance_id_prefix: Option<String>,
    /// Only instances that carry every one of these tags with these values.
    pub tags: Tags,
    /// Also list entities (rows whose instance ID starts with `@`, see
    /// `taskhub_core::EntityId`). `false` (the default) lists orchestrations only; the store
    /// leaves entities out in its query, so a page is never short because of them.
    pub include_entities: bool,
    /// The order of the rows (by instance ID unless set).
    pub order: ListOrder,
    /// Page size (1 to 1,000; 0 means 100).
    pub page_size: usize,
    /// Continuation token from the previous page.
    pub continuation: Option<String>,
}

/// One page of instances.
#[derive(Debug, Clone, PartialEq)]
pub struct InstancePage {
    /// Rows, in the query's order.
    pub instances: Vec<InstanceRow>,
    /// Token for the next page, if there may be more.
    pub continuation: Option<String>,
}

/// The instances table.
///
/// Contract:
/// * `put_instance` with `Expect::Absent` MUST fail with `Conflict` if the row exists; with
///   `Expect::ETag` it MUST fail with `Conflict` unless the stored ETag matches (and with
///   `Conflict` if the row is missing); with `Expect::AbsentOrPending(e)` it MUST fail with
///   `Conflict` unless the row is missing or is a Pending row of execution `e`
///   ([`Expect::allows`]), judged atomically with the write; on success it MUST return the
///   new ETag, which MUST differ from the previous one.
/// * `get_instance` MUST return the row with its current ETag, or `None`.
/// * `list_instances` MUST apply every filter, MUST order by `order` (instance ID; or
///   creation time, newest or oldest first, ties by instance ID in the same direction), MUST
///   return at most `page_size` rows, and following continuation tokens MUST visit every
///   matching row exactly once (rows not changed meanwhile).
/// * `list_instances` MUST leave out rows whose instance ID starts with `@` (entities)
///   unless `include_entities` is set, in the query itself: pages stay full and tokens visit
///   every other matching row.
/// * `delete_instance` MUST remove the row and report whether it existed.
/// * `delete_instance_if` MUST remove the row only if its stored ETag is the given one, and
///   report whether it did: `false` (not an error) when the row changed since that ETag was
///   read or is gone. A write that committed between the read and the delete therefore
///   survives.
#[async_trait]
pub trait InstanceStore: Send + Sync {
    /// Reads one row.
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>>;
    /// Writes one row under a condition; returns the new ETag.
    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag>;
    /// Lists rows matching a query, one page at a time.
    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage>;
    /// Deletes one row; returns true if it existed.
    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool>;
    /// Deletes one row if it is still at `etag`; returns true if it did (false if the row
    /// changed or is gone).
    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool>;
}
