//! The status of one given execution of an instance: the current one (from the instance row)
//! or an earlier one that ended by continue-as-new (from the row's execution records, kept
//! after the next execution replaced its history).

use taskhub_core::{
    ExecutionId, FailureDetails, InstanceId, OrchestrationStatus, Payload, Timestamp,
};

use super::TaskHubClient;
use crate::error::TaskhubError;

/// One execution's status and result.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionStatus {
    /// The instance.
    pub instance_id: InstanceId,
    /// The execution.
    pub execution_id: ExecutionId,
    /// The orchestration's name.
    pub name: String,
    /// Its status: `ContinuedAsNew` for an earlier execution.
    pub status: OrchestrationStatus,
    /// The execution's input.
    pub input: Payload,
    /// Its output (an earlier execution's: the input it passed to the next one; a terminated
    /// one's: the reason).
    pub output: Option<Payload>,
    /// Its failure, if it failed.
    pub failure: Option<FailureDetails>,
    /// Its custom status (an earlier execution's: when it ended).
    pub custom_status: Option<Payload>,
    /// When it started (for the first execution: when the instance was created).
    pub started_at: Timestamp,
    /// When it ended, if it has.
    pub completed_at: Option<Timestamp>,
    /// True for the instance's current execution.
    pub current: bool,
}

impl TaskHubClient {
    /// The status of execution `execution_id` of an instance: its current execution, or one
    /// of the last [`MAX_EXECUTION_RECORDS`](taskhub_storage::MAX_EXECUTION_RECORDS)
    /// executions that ended by continue-as-new.
    ///
    /// # Errors
    /// `NotFound` if the instance does not exist, `ExecutionNotFound` if it has no such
    /// execution (or no longer keeps its record), or a storage error.
    pub async fn get_execution(
        &self,
        instance_id: &InstanceId,
        execution_id: &ExecutionId,
    ) -> Result<ExecutionStatus, TaskhubError> {
        let row = self.existing(instance_id).await?;
        if row.execution_id == *execution_id {
            let started_at = started_at(&row.executions, &row.execution_id, row.created_at);
            let output = row
                .output
                .clone()
                .filter(|_| row.status != OrchestrationStatus::Suspended);
            return Ok(ExecutionStatus {
                instance_id: row.instance_id,
                execution_id: row.execution_id,
                name: row.name,
                status: row.status,
                input: row.input,
                output,
                failure: row.failure,
                custom_status: row.custom_status,
                started_at,
                completed_at: row.completed_at,
                current: true,
            });
        }
        let record = row
            .executions
            .into_iter()
            .find(|e| e.execution_id == *execution_id)
            .ok_or_else(|| TaskhubError::ExecutionNotFound {
                instance_id: instance_id.clone(),
                execution_id: execution_id.clone(),
            })?;
        Ok(ExecutionStatus {
            instance_id: row.instance_id,
            execution_id: record.execution_id,
            name: row.name,
            status: record.status,
            input: record.input,
            output: record.output,
            failure: record.failure,
            custom_status: record.custom_status,
            started_at: record.started_at,
            completed_at: Some(record.completed_at),
            current: false,
        })
    }
}

/// When the row's execution started: its own record's start once it ended by continue-as-new
/// (the row says `ContinuedAsNew` until the next execution starts), else when the execution
/// before it ended, else when the instance was created.
fn started_at(
    records: &[taskhub_storage::ExecutionRecord],
    execution: &ExecutionId,
    created_at: Timestamp,
) -> Timestamp {
    match records.last() {
        Some(own) if own.execution_id == *execution => own.started_at,
        Some(previous) => previous.completed_at,
        None => created_at,
    }
}

#[cfg(test)]
mod tests {
    use taskhub_storage::ExecutionRecord;

    use super::*;

    fn record(id: &str, started: u64, ended: u64) -> ExecutionRecord {
        ExecutionRecord {
            execution_id: ExecutionId::new(id).unwrap(),
            status: OrchestrationStatus::ContinuedAsNew,
            input: Payload::null(),
            output: None,
            failure: None,
            custom_status: None,
            started_at: Timestamp::from_millis(started),
            completed_at: Timestamp::from_millis(ended),
        }
    }

    #[test]
    fn an_execution_starts_when_the_one_before_it_ended() {
        let created = Timestamp::from_millis(100);
        let e = |id: &str| ExecutionId::new(id).unwrap();
        assert_eq!(
            started_at(&[], &e("e-1"), created),
            created,
            "the first one"
        );
        let records = [record("e-1", 100, 500)];
        assert_eq!(
            started_at(&records, &e("e-2"), created),
            Timestamp::from_millis(500),
            "the next one"
        );
        // The row still names e-1 (ContinuedAsNew) until e-2 starts: e-1 started at 100, not
        // when it ended.
        assert_eq!(
            started_at(&records, &e("e-1"), created),
            Timestamp::from_millis(100)
        );
    }
}
