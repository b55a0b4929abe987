//! Predicates over an instance row and the messages that meet it, shared by the client (which
//! acts on a row waiting for its scheduled start, `client::prestart`) and the worker (which
//! judges starts, discards and row writes by them, `worker::orchestration`). Pure: no storage, no clock.

use taskhub_core::{EventKind, ExecutionId, Message, OrchestrationStatus, Timestamp};
use taskhub_storage::InstanceRow;

/// True for a Pending row whose start is scheduled after `now`: its start message is still
/// invisible in the control queue.
pub(crate) fn waits_for_its_start(row: &InstanceRow, now: Timestamp) -> bool {
    row.status == OrchestrationStatus::Pending && row.scheduled_start.is_some_and(|t| t > now)
}

/// True for a row that was terminated by a client before its scheduled start.
pub(crate) fn terminated_before_start(row: &InstanceRow) -> bool {
    row.status == OrchestrationStatus::Terminated
        && row
            .scheduled_start
            .zip(row.completed_at)
            .is_some_and(|(start, done)| done < start)
}

/// Is `row` a row a client wrote for an execution other than `loaded` that has not run yet
/// (a new start, or one terminated or suspended before its start)? Such a row is ahead of the
/// history, not behind it: a turn or a repair of the loaded execution must not overwrite it.
pub(crate) fn row_is_ahead(row: &InstanceRow, loaded: &ExecutionId) -> bool {
    row.execution_id != *loaded
        && (matches!(
            row.status,
            OrchestrationStatus::Pending | OrchestrationStatus::Suspended
        ) || terminated_before_start(row))
}

/// Is `m` a client's start that was delayed to a scheduled time? Delivered with no instance
/// row, such a start was purged before it ran.
pub(crate) fn is_delayed_client_start(m: &Message) -> bool {
    m.sender.is_none()
        && matches!(
            m.event,
            EventKind::ExecutionStarted { scheduled_start: Some(at), .. } if at > m.enqueued_at
        )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use taskhub_core::{InstanceId, Payload};

    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn row(execution: &str, status: OrchestrationStatus) -> InstanceRow {
        InstanceRow {
            instance_id: InstanceId::new("i").unwrap(),
            name: "O".to_owned(),
            version: None,
            execution_id: ExecutionId::new(execution).unwrap(),
            status,
            input: Payload::null(),
            output: None,
            failure: None,
            custom_status: None,
            created_at: at(0),
            updated_at: at(0),
            completed_at: None,
            scheduled_start: None,
            partition: 0,
            tags: Default::default(),
            executions: Vec::new(),
            etag: None,
        }
    }

    fn start(scheduled_start: Option<Timestamp>, enqueued_at: Timestamp) -> Message {
        Message::from_client(
            InstanceId::new("i").unwrap(),
            EventKind::ExecutionStarted {
                name: "O".to_owned(),
                version: None,
                input: Payload::null(),
                execution_id: ExecutionId::new("e").unwrap(),
                parent: None,
                scheduled_start,
                applied_event_ids: Vec::new(),
                tags: Default::default(),
            },
            enqueued_at,
        )
    }

    #[test]
    fn a_pending_row_waits_for_its_start_until_the_scheduled_time() {
        let waiting = InstanceRow {
            scheduled_start: Some(at(10)),
            ..row("e", OrchestrationStatus::Pending)
        };
        assert!(waits_for_its_start(&waiting, at(9)));
        assert!(!waits_for_its_start(&waiting, at(10)));
        assert!(!waits_for_its_start(
            &row("e", OrchestrationStatus::Pending),
            at(0)
        ));
        let running = InstanceRow {
            scheduled_start: Some(at(10)),
            ..row("e", OrchestrationStatus::Running)
        };
        assert!(!waits_for_its_start(&running, at(0)));
    }

    #[test]
    fn terminated_before_start_needs_an_end_before_the_scheduled_start() {
        let terminated = |done: u64| InstanceRow {
            scheduled_start: Some(at(10)),
            completed_at: Some(at(done)),
            ..row("e", OrchestrationStatus::Terminated)
        };
        assert!(terminated_before_start(&terminated(5)));
        assert!(!terminated_before_start(&terminated(15)));
        let failed = InstanceRow {
            status: OrchestrationStatus::Failed,
            ..terminated(5)
        };
        assert!(!terminated_before_start(&failed));
    }

    #[test]
    fn a_row_of_another_execution_that_has_not_run_is_ahead() {
        let loaded = ExecutionId::new("old").unwrap();
        assert!(row_is_ahead(
            &row("new", OrchestrationStatus::Pending),
            &loaded
        ));
        assert!(row_is_ahead(
            &row("new", OrchestrationStatus::Suspended),
            &loaded
        ));
        assert!(!row_is_ahead(
            &row("new", OrchestrationStatus::Running),
            &loaded
        ));
        assert!(!row_is_ahead(
            &row("old", OrchestrationStatus::Pending),
            &loaded
        ));
        let terminated_early = InstanceRow {
            scheduled_start: Some(at(10)),
            completed_at: Some(at(5)),
            ..row("new", OrchestrationStatus::Terminated)
        };
        assert!(row_is_ahead(&terminated_early, &loaded));
    }

    #[test]
    fn a_delayed_client_start_is_scheduled_after_it_was_sent() {
        assert!(is_delayed_client_start(&start(Some(at(10)), at(5))));
        assert!(!is_delayed_client_start(&start(Some(at(5)), at(5))));
        assert!(!is_delayed_client_start(&start(None, at(5))));
        let mut from_parent = start(Some(at(10)), at(5));
        from_parent.sender = Some(taskhub_core::Sender {
            instance_id: InstanceId::new("parent").unwrap(),
            execution_id: ExecutionId::new("p").unwrap(),
        });
        assert!(!is_delayed_client_start(&from_parent));
    }
}
