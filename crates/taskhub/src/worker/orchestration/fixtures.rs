//! Test rows and messages shared by the unit tests of the orchestration stage's modules.

use taskhub_core::{
    EventKind, ExecutionId, InstanceId, Message, OrchestrationStatus, Payload, Timestamp,
};
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

/// A client's start of `name` for `instance` (execution `exec-1`) with `input`, sent at `at`.
pub(super) fn client_start(instance: InstanceId, name: &str, input: u32, at: Timestamp) -> Message {
    Message::from_client(
        instance,
        EventKind::ExecutionStarted {
            name: name.to_owned(),
            version: None,
            input: Payload::to_payload(&input, "input").unwrap(),
            execution_id: ExecutionId::new("exec-1").unwrap(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        at,
    )
}
