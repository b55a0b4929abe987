//! Test rows shared by the unit tests of the turn's modules.

use taskhub_core::{ExecutionId, InstanceId, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::InstanceRow;

/// A row of instance `instance`, execution `execution` and `status`, created at time 0 with a
/// `null` input and nothing else set; a test changes what it needs with struct update syntax.
pub(super) fn row(instance: &str, execution: &str, status: OrchestrationStatus) -> InstanceRow {
    InstanceRow {
        instance_id: InstanceId::new(instance).unwrap(),
        name: "O".to_owned(),
        version: None,
        execution_id: ExecutionId::new(execution).unwrap(),
        status,
        input: Payload::null(),
        output: None,
        failure: None,
        custom_status: None,
        created_at: Timestamp::from_millis(0),
        updated_at: Timestamp::from_millis(0),
        completed_at: None,
        scheduled_start: None,
        partition: 0,
        tags: Default::default(),
        executions: Vec::new(),
        etag: None,
    }
}
