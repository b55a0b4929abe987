//! The pure planning step of a turn: from the turn's result, its session and the instance row
//! it knows, what its checkpoint writes — the history append, the instance row (and the
//! condition it is written under), and whether the turn's actions go out with it. No storage,
//! no clock: unit-tested on plain values. (The outbound messages themselves are encoded by
//! `outbox`, which may store large payloads.)

use taskhub_core::{
    Action, EventKind, OrchestrationSession, OrchestrationStatus, Timestamp, TurnResult,
};
use taskhub_storage::{
    ETag, ExecutionRecord, Expect, HistoryWrite, InstanceRow, MAX_EXECUTION_RECORDS,
};

use crate::rows;

/// What a turn's plan is made from.
pub(super) struct PlanInput<'a> {
    /// The session after the turn ran.
    pub session: &'a OrchestrationSession,
    /// The turn's result.
    pub result: &'a TurnResult,
    /// The instance row this session last read or wrote.
    pub known_row: Option<&'a InstanceRow>,
    /// The history ETag this session loaded or last wrote (`None`: no history yet).
    pub history_etag: Option<&'a ETag>,
    /// True if the turn began a new execution (its history replaces the old one's).
    pub new_execution: bool,
    /// The instance's home partition (for a row of a new instance).
    pub partition: u32,
    /// The turn's time.
    pub now: Timestamp,
}

/// An instance-row write and its condition.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RowWrite {
    /// The row.
    pub row: InstanceRow,
    /// Written only if the stored row is still the one this session knows (a start racing
    /// the turn makes the checkpoint conflict, and the retry sees the start).
    pub expect: Expect,
}

/// What a turn's checkpoint writes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnWrites {
    /// The events to append (none if the turn applied nothing).
    pub history: Option<HistoryWrite>,
    /// The row to write: none if the turn applied nothing, or if a client already wrote the
    /// row of a newer execution (a restart), which this turn must not overwrite.
    pub row: Option<RowWrite>,
    /// True if the turn's actions are sent with this checkpoint (only with its events).
    pub send_actions: bool,
}

/// Plans a turn's checkpoint.
pub(super) fn plan(input: &PlanInput<'_>) -> TurnWrites {
    let PlanInput {
        session,
        result,
        known_row,
        history_etag,
        new_execution,
        partition,
        now,
    } = *input;
    if result.new_events.is_empty() {
        return TurnWrites {
            history: None,
            row: None,
            send_actions: false,
        };
    }
    let execution = session.execution_id();
    // A client that started a new execution (restart, terminate-and-restart) already wrote
    // its row: this turn of the old execution must not overwrite it.
    let ahead = !new_execution && known_row.is_some_and(|r| rows::row_is_ahead(r, &execution));
    let row = (!ahead).then(|| RowWrite {
        row: build_row(known_row, session, result, partition, now),
        // No row known (a sub-orchestration's first turn, a start taken before the client's
        // row landed): create it, or replace the client's Pending row of this execution, but
        // never a row further along — a writer resumed after its lease moved would turn a
        // newer owner's Completed row back to Running.
        expect: known_row
            .and_then(|r| r.etag.clone())
            .map_or_else(|| Expect::AbsentOrPending(execution.clone()), Expect::ETag),
    });
    TurnWrites {
        history: Some(HistoryWrite {
            execution_id: execution,
            expected: history_etag.cloned(),
            new_execution,
            events: result.new_events.clone(),
        }),
        row,
        send_actions: true,
    }
}

/// The instance row after a turn.
pub(super) fn build_row(
    prev: Option<&InstanceRow>,
    session: &OrchestrationSession,
    r: &TurnResult,
    partition: u32,
    now: Timestamp,
) -> InstanceRow {
    let execution = session.execution_id();
    let same_execution = prev.filter(|p| p.execution_id == execution);
    let status = r.status.unwrap_or_else(|| session.status());
    let (output, failure) = output_and_failure(same_execution, status, r);
    let custom_status = r
        .custom_status
        .clone()
        .or_else(|| same_execution.and_then(|p| p.custom_status.clone()));
    let executions = executions_after(prev, session, r, status, now, &custom_status);
    InstanceRow {
        instance_id: session.instance_id(),
        name: session.name(),
        version: session.version(),
        execution_id: execution,
        status,
        input: session.input().clone(),
        output,
        failure,
        custom_status,
        created_at: prev.map_or(now, |p| p.created_at),
        updated_at: now,
        completed_at: status.is_terminal().then_some(now),
        scheduled_start: prev.and_then(|p| p.scheduled_start),
        partition: prev.map_or(partition, |p| p.partition),
        // Set at the start (a client's in its Pending row, a parent's for its child in the
        // child's `ExecutionStarted`), kept across continue-as-new.
        tags: started_tags(r)
            .or_else(|| prev.map(|p| p.tags.clone()))
            .unwrap_or_default(),
        executions,
        etag: None,
    }
}

/// The row's output and failure after a turn that leaves the execution in `status`:
/// `same` is the previous row if it was of the same execution.
fn output_and_failure(
    same: Option<&InstanceRow>,
    status: OrchestrationStatus,
    r: &TurnResult,
) -> (
    Option<taskhub_core::Payload>,
    Option<taskhub_core::FailureDetails>,
) {
    // The output of a Completed row is the result; of a Terminated row the termination
    // reason; of a Suspended row the suspension reason (cleared on resume).
    let mut output = same
        .filter(|p| p.status == status)
        .and_then(|p| p.output.clone());
    let mut failure = same.and_then(|p| p.failure.clone());
    // A rewind forgets the failure (unless the turn fails again, below).
    if r.new_events
        .iter()
        .any(|e| matches!(e.event, EventKind::ExecutionRewound { .. }))
    {
        failure = None;
    }
    for a in &r.actions {
        match a {
            Action::Complete { result } => output = Some(result.clone()),
            Action::Fail { failure: f } => failure = Some(f.clone()),
            _ => {}
        }
    }
    let events = r.new_events.iter().map(|e| &e.event);
    match status {
        OrchestrationStatus::Terminated => {
            if let Some(EventKind::ExecutionTerminated {
                reason,
                output: given,
            }) = events
                .rev()
                .find(|e| matches!(e, EventKind::ExecutionTerminated { .. }))
            {
                // The output a client gave as it is (an SDK's terminate output); else the
                // reason as a JSON string.
                output = match given {
                    Some(given) => Some(given.clone()),
                    None => taskhub_core::Payload::to_payload(reason, "termination reason").ok(),
                };
            }
        }
        OrchestrationStatus::Suspended => {
            if let Some(EventKind::ExecutionSuspended { reason }) = events
                .rev()
                .find(|e| matches!(e, EventKind::ExecutionSuspended { .. }))
            {
                output = reason
                    .as_ref()
                    .and_then(|r| taskhub_core::Payload::to_payload(r, "suspension reason").ok());
            }
        }
        _ => {}
    }
    (output, failure)
}

/// The tags a parent gave the child this turn starts (its `ExecutionStarted`'s), if any.
fn started_tags(r: &TurnResult) -> Option<taskhub_core::Tags> {
    r.new_events.iter().find_map(|e| match &e.event {
        EventKind::ExecutionStarted { tags, .. } if !tags.is_empty() => Some((**tags).clone()),
        _ => None,
    })
}

/// The row's execution records after a turn: the previous row's, plus this execution's when
/// it ended by continue-as-new (its history is replaced by the next execution's, so the
/// record is all that remains of it), at most [`MAX_EXECUTION_RECORDS`].
fn executions_after(
    prev: Option<&InstanceRow>,
    session: &OrchestrationSession,
    r: &TurnResult,
    status: OrchestrationStatus,
    now: Timestamp,
    custom_status: &Option<taskhub_core::Payload>,
) -> Vec<ExecutionRecord> {
    let mut executions = prev.map(|p| p.executions.clone()).unwrap_or_default();
    if status != OrchestrationStatus::ContinuedAsNew {
        return executions;
    }
    let execution_id = session.execution_id();
    // A row rewritten for the same ending (a repair) replaces its record.
    executions.retain(|e| e.execution_id != execution_id);
    let started_at = executions
        .last()
        .map(|e| e.completed_at)
        .or_else(|| prev.map(|p| p.created_at))
        .unwrap_or(now);
    // The input passed on: from the turn's action, or (a repair) from the recorded event.
    let output = r
        .actions
        .iter()
        .find_map(|a| match a {
            Action::ContinueAsNew { input, .. } => Some(input.clone()),
            _ => None,
        })
        .or_else(|| {
            r.new_events.iter().find_map(|e| match &e.event {
                EventKind::ContinuedAsNew { input, .. } => Some(input.clone()),
                _ => None,
            })
        });
    executions.push(ExecutionRecord {
        execution_id,
        status,
        input: session.input().clone(),
        output,
        failure: None,
        custom_status: custom_status.clone(),
        started_at,
        completed_at: now,
    });
    let extra = executions.len().saturating_sub(MAX_EXECUTION_RECORDS);
    executions.drain(..extra);
    executions
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use taskhub_core::{
        ExecutionId, InstanceId, OrchestrationContext, OrchestrationError, Payload, Registry,
        TurnInput,
    };

    use super::*;

    fn registry() -> Arc<Registry> {
        let mut r = Registry::new();
        r.orchestration("Echo", |_ctx: OrchestrationContext, n: u32| async move {
            Ok::<_, OrchestrationError>(n)
        })
        .orchestration("Again", |ctx: OrchestrationContext, n: u32| async move {
            ctx.continue_as_new::<_, u32>(n + 1).await
        })
        .orchestration("Waits", |ctx: OrchestrationContext, _: u32| async move {
            Ok::<_, OrchestrationError>(ctx.wait_for_event::<u32>("go").await?)
        });
        Arc::new(r)
    }

    fn id() -> InstanceId {
        InstanceId::new("plan-1").unwrap()
    }

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000 + ms)
    }

    /// A session that ran the start of `name` with input 1 (execution `exec-1`).
    fn started(name: &str) -> (OrchestrationSession, TurnResult) {
        let mut session = OrchestrationSession::new(registry(), id());
        let start = crate::worker::orchestration::fixtures::client_start(id(), name, 1, at(0));
        let result = session.turn(TurnInput {
            now: at(10),
            messages: vec![start],
        });
        (session, result)
    }

    /// The Pending row a client writes with a start.
    fn pending(execution: &str) -> InstanceRow {
        InstanceRow {
            instance_id: id(),
            name: "Echo".to_owned(),
            input: Payload::to_payload(&1u32, "input").unwrap(),
            created_at: at(0),
            updated_at: at(0),
            partition: 3,
            tags: [("team".to_owned(), "ops".to_owned())].into(),
            etag: Some(ETag("row-1".to_owned())),
            ..crate::worker::orchestration::fixtures::row(
                "x",
                execution,
                OrchestrationStatus::Pending,
            )
        }
    }

    fn input<'a>(
        session: &'a OrchestrationSession,
        result: &'a TurnResult,
        known_row: Option<&'a InstanceRow>,
    ) -> PlanInput<'a> {
        PlanInput {
            session,
            result,
            known_row,
            history_etag: None,
            new_execution: true,
            partition: 0,
            now: at(10),
        }
    }

    #[test]
    fn a_first_turn_appends_history_and_writes_the_row_over_the_one_it_knows() {
        let (session, result) = started("Echo");
        let row = pending("exec-1");
        let writes = plan(&input(&session, &result, Some(&row)));
        let history = writes.history.unwrap();
        assert!(history.new_execution);
        assert_eq!(history.expected, None);
        assert_eq!(history.events, result.new_events);
        assert!(writes.send_actions);
        let RowWrite { row: new, expect } = writes.row.unwrap();
        assert_eq!(expect, Expect::ETag(ETag("row-1".to_owned())));
        assert_eq!(new.status, OrchestrationStatus::Completed);
        assert_eq!(new.output.unwrap().parse::<u32>("output").unwrap(), 1);
        assert_eq!(new.completed_at, Some(at(10)));
        assert_eq!(
            (new.partition, new.created_at, new.tags),
            (3, at(0), row.tags),
            "kept from the row it knows"
        );
        // Without a row: a new one, on the turn's partition, that may replace only the
        // client's Pending row of this execution (never a newer owner's row).
        let writes = plan(&input(&session, &result, None));
        let RowWrite { row: new, expect } = writes.row.unwrap();
        assert_eq!(
            (new.partition, expect),
            (0, Expect::AbsentOrPending(session.execution_id()))
        );
    }

    #[test]
    fn a_turn_that_applies_nothing_writes_nothing() {
        let (mut session, _) = started("Waits");
        let result = session.turn(TurnInput {
            now: at(20),
            messages: Vec::new(),
        });
        assert_eq!(
            plan(&input(&session, &result, None)),
            TurnWrites {
                history: None,
                row: None,
                send_actions: false,
            }
        );
    }

    #[test]
    fn a_row_a_client_wrote_for_a_newer_execution_is_not_overwritten() {
        let (session, result) = started("Waits");
        let restarted = pending("exec-2");
        let loaded = ETag("h-1".to_owned());
        let mut turn = input(&session, &result, Some(&restarted));
        turn.new_execution = false;
        turn.history_etag = Some(&loaded);
        let writes = plan(&turn);
        assert_eq!(writes.row, None);
        let history = writes.history.unwrap();
        assert_eq!(history.expected, Some(ETag("h-1".to_owned())));
        assert!(!history.new_execution);
    }

    #[test]
    fn continue_as_new_keeps_a_record_of_the_execution() {
        let (session, result) = started("Again");
        let row = pending("exec-1");
        let new = plan(&input(&session, &result, Some(&row))).row.unwrap().row;
        assert_eq!(new.status, OrchestrationStatus::ContinuedAsNew);
        let [record] = &new.executions[..] else {
            panic!("one record: {:?}", new.executions);
        };
        assert_eq!(record.execution_id, ExecutionId::new("exec-1").unwrap());
        assert_eq!(record.input.parse::<u32>("input").unwrap(), 1);
        assert_eq!(
            record
                .output
                .as_ref()
                .unwrap()
                .parse::<u32>("output")
                .unwrap(),
            2
        );
        assert_eq!((record.started_at, record.completed_at), (at(0), at(10)));
        // Written again for the same ending (a repair), the record is replaced, not doubled.
        let again = plan(&input(&session, &result, Some(&new))).row.unwrap().row;
        assert_eq!(again.executions.len(), 1);
    }
}
