//! A worker's `RewindOrchestrationAction`: the history it says a rewind leaves.
//!
//! Taskhub rewinds an execution's history itself, for every executor (what a rewind drops and
//! keeps: `taskhub_core::engine::rewind`): an SDK worker is sent the rewound history as
//! `pastEvents` and `[orchestratorStarted, executionRewound]` as `newEvents`, and replays it
//! as any turn, scheduling again what the rewind dropped. The Python and JavaScript workers
//! answer a turn with a `rewindOrchestration` action (`newHistory`) instead when they see a
//! rewind on top of a history that still ends in `executionCompleted`, which Taskhub never
//! sends; a worker may still answer so, and the answer is checked here:
//!
//! * the new history must be the history the worker was sent (past then new events) less only
//!   what a rewind may drop ([`check_new_history`]): a `taskFailed`, the `taskScheduled` of a
//!   failed task, a `subOrchestrationInstanceFailed`, the failure's `executionCompleted`; an
//!   `executionStarted` may differ in its execution IDs only (the SDKs give the rewound
//!   execution a new one; Taskhub keeps the execution). Otherwise the execution fails
//!   (`InvalidOrchestratorAction`) naming the first event that differs.
//! * A new history that passes says nothing Taskhub's own rewind has not done: the stored
//!   history stands (it is the rewound one already), and the turn is **asked again** with the
//!   same past and its new events less `executionRewound`, which the worker then replays as an
//!   ordinary turn: it schedules the dropped tasks again, and that answer is the turn's
//!   decision. Recording the rewind answer as a turn with no decision instead would leave the
//!   dropped tasks unscheduled until some other message woke the instance (for ever, when none
//!   comes); asking again with the same request would get the same answer every time.
//! * A rewind action must be the answer's only action (as the SDKs send it); a second rewind
//!   answer to the turn asked again fails the execution.

use std::sync::Arc;

use taskhub::executor::{Decision, ExecutorError, OrchestrationDecision, OrchestrationWork};
use taskhub::{EventKind, FailureDetails};

use super::actions::INVALID_ACTION;
use super::state::{Kind, Reply};
use crate::convert::{event_to_proto_with_entities, EntityRequests};
use crate::proto::{
    history_event::EventType as E, orchestrator_action::OrchestratorActionType as A, HistoryEvent,
    OrchestrationStatus, OrchestratorResponse,
};

/// What an answer says about a rewind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RewindAnswer {
    /// No rewind action: an ordinary answer.
    None,
    /// A rewind action whose new history is the rewound one: ask the turn again
    /// ([`without_rewind_event`]).
    Accepted,
    /// A rewind action that cannot be taken: the execution fails with this.
    Refused(FailureDetails),
}

/// What `r`, the answer to `work`, says about a rewind (see the [module docs](self)).
pub(crate) fn rewind_answer(work: &OrchestrationWork, r: &OrchestratorResponse) -> RewindAnswer {
    let rewinds = r
        .actions
        .iter()
        .filter(|a| matches!(a.orchestrator_action_type, Some(A::RewindOrchestration(_))))
        .count();
    if rewinds == 0 {
        return RewindAnswer::None;
    }
    let refused = |message: String| RewindAnswer::Refused(invalid(message));
    let Some(A::RewindOrchestration(rewind)) = r
        .actions
        .first()
        .and_then(|a| a.orchestrator_action_type.as_ref())
        .filter(|_| r.actions.len() == 1)
    else {
        return refused(format!(
            "actions: a rewindOrchestration action must be the answer's only action ({} \
             actions, {rewinds} of them rewinds)",
            r.actions.len()
        ));
    };
    let requests = EntityRequests::of(work.past.iter().chain(&work.new));
    let sent: Vec<HistoryEvent> = work
        .past
        .iter()
        .chain(&work.new)
        .map(|e| event_to_proto_with_entities(e, &work.instance, &requests))
        .collect();
    match check_new_history(&sent, &rewind.new_history) {
        Ok(()) => RewindAnswer::Accepted,
        Err(e) => refused(format!("actions[0].rewindOrchestration.newHistory: {e}")),
    }
}

/// `work` asked again after a rewind answer: its new events less `executionRewound` (the
/// runtime records the turn's events itself; the worker replays the same past).
pub(crate) fn without_rewind_event(work: &OrchestrationWork) -> OrchestrationWork {
    let mut again = work.clone();
    again
        .new
        .retain(|e| !matches!(e.event, EventKind::ExecutionRewound { .. }));
    again
}

impl super::Dispatcher {
    /// Asks `work`'s turn again after a rewind answer that was taken
    /// ([`RewindAnswer::Accepted`]), without its `executionRewound`: the worker's answer, or
    /// the failure the execution ends with when it answers with a rewind again.
    pub(super) async fn ask_again(
        &self,
        work: &OrchestrationWork,
        what: &(dyn Fn() -> String + Sync),
    ) -> Result<Result<OrchestratorResponse, FailureDetails>, ExecutorError> {
        let again = Arc::new(without_rewind_event(work));
        let rebuild = self.orchestrator_rebuild(&again);
        match self.run(Kind::Orchestration, rebuild, what).await? {
            Reply::Orchestrator(r) => match rewind_answer(&again, &r) {
                RewindAnswer::None => Ok(Ok(r)),
                RewindAnswer::Refused(failure) => Ok(Err(failure)),
                RewindAnswer::Accepted => Ok(Err(invalid(
                    "actions[0].rewindOrchestration: the turn was asked again after a rewind \
                     answer (Taskhub had rewound the history already) and answered with a \
                     rewind again"
                        .to_owned(),
                ))),
            },
            other => Err(super::abandoned(other, what())),
        }
    }
}

/// The decision of a turn whose rewind answer could not be taken: the execution fails.
pub(crate) fn failed(failure: FailureDetails) -> OrchestrationDecision {
    OrchestrationDecision::new(vec![Decision::Fail { failure }])
}

/// An `InvalidOrchestratorAction` failure saying `message`.
fn invalid(message: String) -> FailureDetails {
    FailureDetails {
        error_type: INVALID_ACTION.into(),
        message: format!("the SDK worker's answer cannot be taken: {message}"),
        details: None,
        non_retryable: true,
    }
}

/// The task IDs of the failed tasks in `sent`.
fn failed_tasks(sent: &[HistoryEvent]) -> Vec<i32> {
    sent.iter()
        .filter_map(|e| match &e.event_type {
            Some(E::TaskFailed(f)) => Some(f.task_scheduled_id),
            _ => None,
        })
        .collect()
}

/// Checks a rewind's `new_history` against `sent`, the history the worker was sent (past then
/// new events): it must be `sent` in order, less only events a rewind may drop (see the
/// [module docs](self)). The error names the first event that differs.
pub(crate) fn check_new_history(
    sent: &[HistoryEvent],
    new_history: &[HistoryEvent],
) -> Result<(), String> {
    let failed_tasks = failed_tasks(sent);
    let droppable = |e: &HistoryEvent| match &e.event_type {
        Some(E::TaskFailed(_) | E::SubOrchestrationInstanceFailed(_)) => true,
        Some(E::TaskScheduled(_)) => failed_tasks.contains(&e.event_id),
        Some(E::ExecutionCompleted(c)) => {
            c.orchestration_status == OrchestrationStatus::Failed as i32
        }
        _ => false,
    };
    let mut kept = new_history.iter().enumerate().peekable();
    for (k, s) in sent.iter().enumerate() {
        match kept.peek() {
            Some((_, n)) if same_event(s, n) => {
                kept.next();
            }
            _ if droppable(s) => {}
            Some((j, n)) => {
                return Err(format!(
                    "event {j} is {} where the history sent has {} (its event {k}), which a \
                     rewind keeps (a rewind drops only taskFailed, the taskScheduled of a failed \
                     task, subOrchestrationInstanceFailed and the failure's executionCompleted)",
                    describe(n),
                    describe(s)
                ))
            }
            None => {
                return Err(format!(
                    "it ends after {} events, without the history sent's event {k} ({}), which a \
                     rewind keeps",
                    new_history.len(),
                    describe(s)
                ))
            }
        }
    }
    match kept.next() {
        None => Ok(()),
        Some((j, n)) => Err(format!(
            "event {j} ({}) is not in the history sent (a rewind only drops events)",
            describe(n)
        )),
    }
}

/// Whether a kept event is the one sent: equal, but for the execution IDs of an
/// `executionStarted` (its own and its parent's).
fn same_event(sent: &HistoryEvent, kept: &HistoryEvent) -> bool {
    match (&sent.event_type, &kept.event_type) {
        (Some(E::ExecutionStarted(_)), Some(E::ExecutionStarted(_))) => {
            without_execution_ids(sent) == without_execution_ids(kept)
        }
        _ => sent == kept,
    }
}

fn without_execution_ids(e: &HistoryEvent) -> HistoryEvent {
    let mut e = e.clone();
    if let Some(E::ExecutionStarted(s)) = &mut e.event_type {
        if let Some(o) = &mut s.orchestration_instance {
            o.execution_id = None;
        }
        if let Some(o) = s
            .parent_instance
            .as_mut()
            .and_then(|p| p.orchestration_instance.as_mut())
        {
            o.execution_id = None;
        }
    }
    e
}

/// An event as an error names it: its kind and, for a task's event, the task.
fn describe(e: &HistoryEvent) -> String {
    let (kind, task) = match &e.event_type {
        None => ("no event", None),
        Some(E::ExecutionStarted(_)) => ("executionStarted", None),
        Some(E::ExecutionCompleted(_)) => ("executionCompleted", None),
        Some(E::ExecutionTerminated(_)) => ("executionTerminated", None),
        Some(E::TaskScheduled(_)) => ("taskScheduled", Some(e.event_id)),
        Some(E::TaskCompleted(c)) => ("taskCompleted", Some(c.task_scheduled_id)),
        Some(E::TaskFailed(f)) => ("taskFailed", Some(f.task_scheduled_id)),
        Some(E::SubOrchestrationInstanceCreated(_)) => {
            ("subOrchestrationInstanceCreated", Some(e.event_id))
        }
        Some(E::SubOrchestrationInstanceCompleted(c)) => (
            "subOrchestrationInstanceCompleted",
            Some(c.task_scheduled_id),
        ),
        Some(E::SubOrchestrationInstanceFailed(f)) => {
            ("subOrchestrationInstanceFailed", Some(f.task_scheduled_id))
        }
        Some(E::TimerCreated(_)) => ("timerCreated", Some(e.event_id)),
        Some(E::TimerFired(f)) => ("timerFired", Some(f.timer_id)),
        Some(E::OrchestratorStarted(_)) => ("orchestratorStarted", None),
        Some(E::OrchestratorCompleted(_)) => ("orchestratorCompleted", None),
        Some(E::EventSent(_)) => ("eventSent", Some(e.event_id)),
        Some(E::EventRaised(_)) => ("eventRaised", None),
        Some(E::GenericEvent(_)) => ("genericEvent", None),
        Some(E::HistoryState(_)) => ("historyState", None),
        Some(E::ContinueAsNew(_)) => ("continueAsNew", None),
        Some(E::ExecutionSuspended(_)) => ("executionSuspended", None),
        Some(E::ExecutionResumed(_)) => ("executionResumed", None),
        Some(E::EntityOperationSignaled(_)) => ("entityOperationSignaled", None),
        Some(E::EntityOperationCalled(_)) => ("entityOperationCalled", None),
        Some(E::EntityOperationCompleted(_)) => ("entityOperationCompleted", None),
        Some(E::EntityOperationFailed(_)) => ("entityOperationFailed", None),
        Some(E::EntityLockRequested(_)) => ("entityLockRequested", None),
        Some(E::EntityLockGranted(_)) => ("entityLockGranted", None),
        Some(E::EntityUnlockSent(_)) => ("entityUnlockSent", None),
        Some(E::ExecutionRewound(_)) => ("executionRewound", None),
    };
    match task {
        Some(id) => format!("{kind} of task {id}"),
        None => kind.to_owned(),
    }
}

#[cfg(test)]
#[path = "rewind_tests.rs"]
mod tests;
