//! Row repair: a torn checkpoint (its history committed, its instance row not) leaves the row
//! behind the history. A loader judges the row against the loaded history ([`judge`], pure)
//! and rewrites it from history ([`repaired_row`], pure; [`write`](fn@write), fenced and conditional on
//! the history and the row it judged), so a finished instance never looks running forever.

use taskhub_core::{
    Action, EventKind, HistoryEvent, InstanceId, OrchestrationSession, OrchestrationStatus,
    Timestamp, TurnResult,
};
use taskhub_storage::{
    CheckpointRequest, ETag, Expect, HistoryWrite, InstanceRow, LeaseFence, StorageError,
};
use tracing::info;

use super::cached::Cached;
use super::plan::build_row;
use super::redeliver::commit;
use crate::hub::TaskHub;
use crate::rows;
use crate::signals::InstanceChanged;

/// What a loader does with the instance row it read next to the history.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one short-lived value per instance load, never stored or queued"
)]
pub(super) enum RowRepair {
    /// Nothing: the row matches the history, or is ahead of it (a client's row for an
    /// execution that has not run), or the execution has not started.
    NotNeeded,
    /// Rewrite the row from history.
    FromHistory {
        /// The execution's terminal event, if it has one (for a suspended execution: its last
        /// `ExecutionSuspended`), whose result or reason the row shows.
        last_event: Option<EventKind>,
    },
}

/// Judges the row read next to the loaded history: it needs a repair when the execution has
/// started, the row is not ahead of the history, and the row is behind it (another execution
/// or status, or missing) or the history carries a pending outbox (its checkpoint was torn).
pub(super) fn judge(
    session: &OrchestrationSession,
    row: Option<&InstanceRow>,
    events: &[HistoryEvent],
    outbox_pending: bool,
) -> RowRepair {
    let status = session.status();
    let execution = session.execution_id();
    // A row a client wrote for another execution that has not run (a new start, a restart of
    // a finished instance, one ended before its scheduled start) is ahead of this history,
    // not behind: rewriting it from history would lose it.
    let ahead = row.is_some_and(|r| rows::row_is_ahead(r, &execution));
    let behind = row.is_none_or(|r| r.execution_id != execution || r.status != status);
    if status == OrchestrationStatus::Pending || ahead || !(outbox_pending || behind) {
        return RowRepair::NotNeeded;
    }
    let last_event = events
        .iter()
        .rev()
        .find(|e| {
            e.event.is_terminal()
                || (status == OrchestrationStatus::Suspended
                    && matches!(e.event, EventKind::ExecutionSuspended { .. }))
        })
        .map(|e| e.event.clone());
    RowRepair::FromHistory { last_event }
}

/// The row rewritten from history: as a turn that ended with `last_event` would write it.
pub(super) fn repaired_row(
    known_row: Option<&InstanceRow>,
    session: &OrchestrationSession,
    last_event: Option<EventKind>,
    partition: u32,
    now: Timestamp,
) -> InstanceRow {
    let mut actions = Vec::new();
    let mut new_events = Vec::new();
    match last_event {
        Some(EventKind::ExecutionCompleted { result }) => actions.push(Action::Complete { result }),
        Some(EventKind::ExecutionFailed { failure }) => actions.push(Action::Fail { failure }),
        // `build_row` takes a Terminated or Suspended row's output (the reason) from the
        // terminating or suspending event, and a continue-as-new's record its output (the next
        // execution's input) from the ContinuedAsNew event.
        Some(
            event @ (EventKind::ExecutionTerminated { .. }
            | EventKind::ExecutionSuspended { .. }
            | EventKind::ContinuedAsNew { .. }),
        ) => {
            new_events.push(HistoryEvent::new(now, event));
        }
        _ => {}
    }
    let synthetic = TurnResult {
        actions,
        new_events,
        status: Some(session.status()),
        custom_status: session.custom_status(),
        ..TurnResult::default()
    };
    build_row(known_row, session, &synthetic, partition, now)
}

/// What a repair is written under: the lease and the history the row was judged against.
pub(super) struct RepairGuard<'a> {
    /// The loader's lease on the instance's partition.
    pub fence: LeaseFence,
    /// The history the row was judged against (its ETag after any outbox re-send).
    pub history_etag: &'a ETag,
}

/// Writes the repaired row (retrying transient errors) and publishes the status change;
/// returns the history's ETag afterwards.
///
/// The row is written by a checkpoint of no events, fenced by the loader's lease and
/// conditional on the history it judged (and on the row it judged): a loader that read the
/// history, stalled, and read the row after a newer owner had finished the instance would
/// otherwise "repair" the Completed row back to the Running status of its old history. With
/// the guard, that write fails (`Fenced`, or `Conflict` on the moved history) and the row
/// stays as the newer owner left it.
pub(super) async fn write(
    hub: &TaskHub,
    instance: &InstanceId,
    cached: &mut Cached,
    row: InstanceRow,
    guard: &RepairGuard<'_>,
) -> Result<ETag, StorageError> {
    // Only over the row that was judged behind: a row a client wrote meanwhile wins, and the
    // messages come back to judge again.
    let expect = match cached.row.as_ref().and_then(|r| r.etag.clone()) {
        Some(etag) => Expect::ETag(etag),
        None => Expect::Absent,
    };
    let request = CheckpointRequest {
        instance_id: instance.clone(),
        fence: Some(guard.fence),
        history: Some(HistoryWrite {
            execution_id: row.execution_id.clone(),
            expected: Some(guard.history_etag.clone()),
            new_execution: false,
            events: Vec::new(),
        }),
        instance: Some((row.clone(), expect)),
        outbound: Vec::new(),
        consumed: Vec::new(),
    };
    let outcome = commit(hub, request).await?;
    info!(%instance, status = %row.status, "instance row repaired from history after a torn checkpoint");
    hub.signals().instance_changed(InstanceChanged {
        instance_id: instance.clone(),
        status: row.status,
    });
    cached.row = Some(InstanceRow {
        etag: outcome.instance_etag,
        ..row
    });
    Ok(outcome
        .history_etag
        .unwrap_or_else(|| guard.history_etag.clone()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use taskhub_core::{OrchestrationContext, OrchestrationError, Payload, Registry, TurnInput};
    use taskhub_storage::ETag;

    use super::*;

    fn registry() -> Arc<Registry> {
        let mut r = Registry::new();
        r.orchestration("Echo", |_ctx: OrchestrationContext, n: u32| async move {
            Ok::<_, OrchestrationError>(n)
        })
        .orchestration("Waits", |ctx: OrchestrationContext, _: u32| async move {
            Ok::<_, OrchestrationError>(ctx.wait_for_event::<u32>("go").await?)
        })
        .orchestration("Again", |ctx: OrchestrationContext, n: u32| async move {
            ctx.continue_as_new::<_, u32>(n + 1).await
        });
        Arc::new(r)
    }

    fn id() -> InstanceId {
        InstanceId::new("repair-1").unwrap()
    }

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000 + ms)
    }

    /// The history of one turn that started `name` (execution `exec-1`), and the session
    /// loaded from it.
    fn history(name: &str) -> (OrchestrationSession, Vec<HistoryEvent>) {
        let mut first = OrchestrationSession::new(registry(), id());
        let start = crate::worker::orchestration::fixtures::client_start(id(), name, 7, at(0));
        let events = first
            .turn(TurnInput {
                now: at(10),
                messages: vec![start],
            })
            .new_events;
        (
            OrchestrationSession::load(registry(), id(), &events),
            events,
        )
    }

    fn row(execution: &str, status: OrchestrationStatus) -> InstanceRow {
        InstanceRow {
            instance_id: id(),
            name: "Echo".to_owned(),
            input: Payload::to_payload(&7u32, "input").unwrap(),
            created_at: at(0),
            updated_at: at(0),
            partition: 2,
            etag: Some(ETag("r".to_owned())),
            ..crate::worker::orchestration::fixtures::row("x", execution, status)
        }
    }

    #[test]
    fn a_row_behind_its_history_is_rewritten_with_the_result() {
        let (session, events) = history("Echo");
        assert_eq!(session.status(), OrchestrationStatus::Completed);
        // The torn checkpoint left the row Running (or no row at all).
        let running = row("exec-1", OrchestrationStatus::Running);
        for known in [Some(&running), None] {
            let RowRepair::FromHistory { last_event } = judge(&session, known, &events, false)
            else {
                panic!("a row behind its history needs a repair");
            };
            assert!(matches!(
                last_event,
                Some(EventKind::ExecutionCompleted { .. })
            ));
            let fixed = repaired_row(known, &session, last_event, 0, at(50));
            assert_eq!(fixed.status, OrchestrationStatus::Completed);
            assert_eq!(fixed.output.unwrap().parse::<u32>("output").unwrap(), 7);
            assert_eq!(fixed.partition, if known.is_some() { 2 } else { 0 });
        }
    }

    #[test]
    fn a_continue_as_new_row_behind_its_history_keeps_the_input_passed_on() {
        let (session, events) = history("Again");
        assert_eq!(session.status(), OrchestrationStatus::ContinuedAsNew);
        let running = row("exec-1", OrchestrationStatus::Running);
        let RowRepair::FromHistory { last_event } = judge(&session, Some(&running), &events, false)
        else {
            panic!("a row behind its history needs a repair");
        };
        let fixed = repaired_row(Some(&running), &session, last_event, 0, at(50));
        assert_eq!(fixed.status, OrchestrationStatus::ContinuedAsNew);
        let [record] = fixed.executions.as_slice() else {
            panic!("one execution record: {:?}", fixed.executions);
        };
        assert_eq!(record.execution_id.as_str(), "exec-1");
        let passed_on = record.output.as_ref().expect("the input passed on");
        assert_eq!(passed_on.parse::<u32>("output").unwrap(), 8);
    }

    #[test]
    fn a_row_in_step_or_ahead_is_left_alone_unless_an_outbox_is_pending() {
        let (session, events) = history("Waits");
        let in_step = row("exec-1", OrchestrationStatus::Running);
        assert_eq!(
            judge(&session, Some(&in_step), &events, false),
            RowRepair::NotNeeded
        );
        assert_eq!(
            judge(&session, Some(&in_step), &events, true),
            RowRepair::FromHistory { last_event: None },
            "a pending outbox: its checkpoint was torn"
        );
        // A client's start of the next execution, not run yet: ahead, never overwritten.
        let restarted = row("exec-2", OrchestrationStatus::Pending);
        assert_eq!(
            judge(&session, Some(&restarted), &events, true),
            RowRepair::NotNeeded
        );
        // Nothing started: nothing to repair.
        let fresh = OrchestrationSession::new(registry(), id());
        assert_eq!(judge(&fresh, None, &[], true), RowRepair::NotNeeded);
    }
}
