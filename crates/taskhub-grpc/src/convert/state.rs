//! An instance row as the protocol's `OrchestrationState`.

use taskhub::{InstanceRow, OrchestrationStatus};

use super::{failure_to_proto, payload_to_proto, status_to_proto, timestamp_to_proto};
use crate::proto::OrchestrationState;

/// What an `OrchestrationState` includes.
#[derive(Debug, Clone, Copy, Default)]
pub struct StateOptions {
    /// Input and output (the SDKs' `getInputsAndOutputs` / `fetchInputsAndOutputs`).
    pub inputs_and_outputs: bool,
}

/// The row as the SDKs read it. The custom status is always sent, failure details only for a
/// Failed instance; the output is a Completed instance's result or a Terminated one's reason
/// (a Suspended row keeps the suspension reason there, which is not an output).
#[must_use]
pub fn state_to_proto(row: &InstanceRow, options: StateOptions) -> OrchestrationState {
    let output = matches!(
        row.status,
        OrchestrationStatus::Completed | OrchestrationStatus::Terminated
    )
    .then_some(row.output.as_ref())
    .flatten();
    OrchestrationState {
        instance_id: row.instance_id.to_string(),
        name: row.name.clone(),
        version: row.version.clone(),
        orchestration_status: status_to_proto(row.status) as i32,
        scheduled_start_timestamp: row.scheduled_start.map(timestamp_to_proto),
        created_timestamp: Some(timestamp_to_proto(row.created_at)),
        last_updated_timestamp: Some(timestamp_to_proto(row.updated_at)),
        input: options
            .inputs_and_outputs
            .then(|| payload_to_proto(&row.input))
            .flatten(),
        output: options
            .inputs_and_outputs
            .then(|| output.and_then(payload_to_proto))
            .flatten(),
        custom_status: row.custom_status.as_ref().and_then(payload_to_proto),
        failure_details: (row.status == OrchestrationStatus::Failed)
            .then(|| row.failure.as_ref().map(failure_to_proto))
            .flatten(),
        execution_id: Some(row.execution_id.to_string()),
        completed_timestamp: row.completed_at.map(timestamp_to_proto),
        parent_instance_id: None,
        tags: row.tags.clone().into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use taskhub::{ExecutionId, FailureDetails, InstanceId, Payload, Timestamp};

    fn row(status: OrchestrationStatus) -> InstanceRow {
        InstanceRow {
            instance_id: InstanceId::new("i-1").unwrap(),
            name: "Orch".into(),
            version: Some("1.0".into()),
            execution_id: ExecutionId::new("e-1").unwrap(),
            status,
            input: Payload::from_json("{\"a\":1}").unwrap(),
            output: Some(Payload::from_json("\"out\"").unwrap()),
            failure: Some(FailureDetails::new("E", "bad")),
            custom_status: Some(Payload::from_json("\"half way\"").unwrap()),
            created_at: Timestamp::from_millis(1000),
            updated_at: Timestamp::from_millis(2000),
            completed_at: None,
            scheduled_start: None,
            partition: 0,
            tags: [("team".to_owned(), "blue".to_owned())]
                .into_iter()
                .collect(),
            executions: Vec::new(),
            etag: None,
        }
    }

    #[test]
    fn inputs_and_outputs_only_when_asked() {
        let with = state_to_proto(
            &row(OrchestrationStatus::Completed),
            StateOptions {
                inputs_and_outputs: true,
            },
        );
        assert_eq!(with.input.as_deref(), Some("{\"a\":1}"));
        assert_eq!(with.output.as_deref(), Some("\"out\""));
        assert_eq!(with.custom_status.as_deref(), Some("\"half way\""));
        assert_eq!(with.tags.get("team").map(String::as_str), Some("blue"));
        assert_eq!(with.execution_id.as_deref(), Some("e-1"));
        assert_eq!(with.created_timestamp.unwrap().seconds, 1);
        assert!(with.failure_details.is_none(), "details only for Failed");
        let without = state_to_proto(
            &row(OrchestrationStatus::Completed),
            StateOptions::default(),
        );
        assert_eq!((without.input, without.output), (None, None));
        assert!(
            without.custom_status.is_some(),
            "custom status is always sent"
        );
    }

    #[test]
    fn a_suspension_reason_is_not_an_output_and_failures_carry_details() {
        let options = StateOptions {
            inputs_and_outputs: true,
        };
        let s = state_to_proto(&row(OrchestrationStatus::Suspended), options);
        assert_eq!(s.output, None);
        assert_eq!(s.orchestration_status, 7);
        let f = state_to_proto(&row(OrchestrationStatus::Failed), options);
        assert_eq!(f.failure_details.unwrap().error_message, "bad");
        assert_eq!(f.output, None);
    }
}
