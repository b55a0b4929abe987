//! Rewind: what a failed execution's history becomes when it is rewound, and what has to be
//! set going again. One definition for every executor: Rust code and SDK workers replay the
//! same rewound history (see `docs/REWIND.md`).
//!
//! The rewound history is the failed one less:
//! * every failed activity: its `TaskFailed` and its `TaskScheduled` (the code schedules it
//!   again, under the same task ID);
//! * every failed sub-orchestration's `SubOrchestrationFailed` (its `SubOrchestrationCreated`
//!   stays: the child is rewound, or started again, and reports to the same task);
//! * what the code did after it saw the first failure (the *cut*): every task, timer,
//!   sub-orchestration and event it scheduled or sent from there on, with their results, and
//!   the answers to the entity requests dropped so. A retry's back-off timer, a compensation,
//!   a release sent as the code failed: they were reactions to a failure rewind forgets. A
//!   critical section still open at the cut moves the cut back to its lock request, so that
//!   the replay acquires the locks again (they were released when the execution failed);
//! * the end: `ExecutionFailed` and the rest of the turn that failed (the code runs that turn
//!   again, live, after the rewind).
//!
//! Everything else stays: each success (an activity's or a child's result, a timer that
//! fired), every external event received, suspensions and resumptions. Work recorded as
//! scheduled that has no result yet (an activity still running when the execution failed, a
//! timer not fired) is sent again, since a result that came while the instance was failed was
//! discarded; a late duplicate is discarded as any duplicate result.
//!
//! [`OrchestrationSession::load_rewound`](crate::OrchestrationSession::load_rewound) replays the
//! kept part: replay lets the code schedule the rewound task IDs
//! (`ExecutionRewound::rewound_tasks`) out of order, setting them aside until they are recorded
//! again; the next turn applies the request.

use std::collections::{BTreeSet, HashSet};

use crate::engine::output::Action;
use crate::engine::session::completion_task_id;
use crate::entity::{EntityRequest, ENTITY_REQUEST_EVENT};
use crate::error::CoreError;
use crate::history::{EventKind, FailureDetails, HistoryEvent};
use crate::ids::InstanceId;
use crate::payload::Payload;
use crate::status::OrchestrationStatus;

/// A failed execution's history, rewound, and the work to set going again.
#[derive(Debug, Clone, PartialEq)]
pub struct RewindPlan {
    /// The history kept (see the [module](self)). The rewind turn appends its events to it.
    pub kept: Vec<HistoryEvent>,
    /// The task IDs whose scheduling events were dropped, ascending: the code schedules them
    /// again (recorded in `ExecutionRewound::rewound_tasks`).
    pub rewound_tasks: Vec<u64>,
    /// Work the kept history records as scheduled with no result yet: activities and timers,
    /// sent again by the rewind turn.
    pub reopened: Vec<Action>,
    /// Sub-orchestrations the kept history waits for: each is rewound, started again or asked
    /// for its result by the runtime, which reads the child's instance row.
    pub children: Vec<OpenChild>,
}

/// A sub-orchestration whose result the rewound execution waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenChild {
    /// The parent's task waiting for it.
    pub task_id: u64,
    /// The child's instance ID.
    pub instance_id: InstanceId,
    /// The child's orchestration name.
    pub name: String,
    /// The child's version, if one was requested.
    pub version: Option<String>,
    /// The child's input, as recorded when it was started.
    pub input: Payload,
    /// The tags the parent gave it.
    pub tags: crate::history::Tags,
    /// The failure the rewind dropped (the child failed, or was terminated), if any.
    pub failure: Option<FailureDetails>,
}

/// The status a history ends in, for a refusal: the last terminal event's, or Running.
fn status_of(history: &[HistoryEvent]) -> OrchestrationStatus {
    let terminal = history.iter().rev().find(|e| e.event.is_terminal());
    match terminal.map(|e| &e.event) {
        Some(EventKind::ExecutionCompleted { .. }) => OrchestrationStatus::Completed,
        Some(EventKind::ExecutionFailed { .. }) => OrchestrationStatus::Failed,
        Some(EventKind::ExecutionTerminated { .. }) => OrchestrationStatus::Terminated,
        Some(EventKind::ContinuedAsNew { .. }) => OrchestrationStatus::ContinuedAsNew,
        _ if history.is_empty() => OrchestrationStatus::Pending,
        _ => OrchestrationStatus::Running,
    }
}

/// Rewinds a failed execution's `history` (see the [module](self) for what is dropped).
///
/// # Errors
/// [`CoreError::NotRewindable`] naming the status when the history does not end in
/// `ExecutionFailed`.
pub fn plan(history: &[HistoryEvent]) -> Result<RewindPlan, CoreError> {
    let end = history
        .iter()
        .rposition(|e| matches!(e.event, EventKind::ExecutionFailed { .. }))
        .filter(|&i| history.iter().skip(i + 1).all(|e| !e.event.is_terminal()));
    let Some(end) = end else {
        return Err(CoreError::NotRewindable {
            status: status_of(history).to_string(),
        });
    };
    let cut = cut_point(history, end);
    let mut dropped = vec![false; history.len()];
    // The end, and the rest of the turn that failed.
    for slot in dropped.iter_mut().skip(end) {
        *slot = true;
    }
    let failed_activities: HashSet<u64> = history
        .iter()
        .filter_map(|e| match e.event {
            EventKind::TaskFailed { task_id, .. } => Some(task_id),
            _ => None,
        })
        .collect();
    let mut rewound = BTreeSet::new();
    let mut dropped_requests = HashSet::new();
    for (pos, e) in history.iter().enumerate().take(end) {
        let Some(task_id) = scheduled_task(&e.event) else {
            continue;
        };
        let failed = matches!(e.event, EventKind::TaskScheduled { .. })
            && failed_activities.contains(&task_id);
        if failed || pos >= cut {
            rewound.insert(task_id);
            if let Some(slot) = dropped.get_mut(pos) {
                *slot = true;
            }
            if let Some(id) = entity_request_id(&e.event) {
                dropped_requests.insert(id);
            }
        }
    }
    for (pos, e) in history.iter().enumerate().take(end) {
        let drop = match &e.event {
            EventKind::TaskFailed { .. } | EventKind::SubOrchestrationFailed { .. } => true,
            EventKind::EventRaised { name, .. } => dropped_requests.contains(name),
            other => completion_task_id(other).is_some_and(|id| rewound.contains(&id)),
        };
        if drop {
            if let Some(slot) = dropped.get_mut(pos) {
                *slot = true;
            }
        }
    }
    let kept: Vec<HistoryEvent> = history
        .iter()
        .zip(&dropped)
        .filter(|(_, d)| !**d)
        .map(|(e, _)| e.clone())
        .collect();
    // The turn that failed keeps its start even when nothing else of it is kept: the count of
    // turns (the episode every message carries) never goes back, so the rewind's turn is
    // later than every message sent before it.
    let (reopened, children) = open_work(&kept, history);
    Ok(RewindPlan {
        kept,
        rewound_tasks: rewound.into_iter().collect(),
        reopened,
        children,
    })
}

/// Where the code's reactions to the failure start: the first failed task's or child's
/// result, or the first thing the code did in the turn that failed, whichever is first. A critical section open there moves it
/// back to the section's lock request.
fn cut_point(history: &[HistoryEvent], end: usize) -> usize {
    let first_failure = history
        .iter()
        .take(end)
        .position(|e| {
            matches!(
                e.event,
                EventKind::TaskFailed { .. } | EventKind::SubOrchestrationFailed { .. }
            )
        })
        .unwrap_or(end);
    // What the code did in the turn that failed, before it failed: the same reactions.
    let turn_start = history
        .iter()
        .take(end)
        .rposition(|e| matches!(e.event, EventKind::OrchestratorStarted))
        .unwrap_or(0);
    let failing_turn = history
        .iter()
        .enumerate()
        .take(end)
        .skip(turn_start)
        .find(|(_, e)| scheduled_task(&e.event).is_some())
        .map_or(end, |(pos, _)| pos);
    let first_failure = first_failure.min(failing_turn);
    let mut open: Vec<(String, usize, usize)> = Vec::new();
    for (pos, e) in history.iter().enumerate().take(first_failure) {
        let EventKind::EventSent { name, input, .. } = &e.event else {
            continue;
        };
        if name != ENTITY_REQUEST_EVENT {
            continue;
        }
        match input.parse::<EntityRequest>("entity request") {
            Ok(EntityRequest::Lock { id, lockset, .. }) => open.push((id, pos, lockset.len())),
            Ok(EntityRequest::Release { id, .. }) => {
                if let Some(section) = open.iter_mut().find(|(o, _, _)| *o == id) {
                    section.2 = section.2.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    open.iter()
        .filter(|(_, _, waiting)| *waiting > 0)
        .map(|(_, pos, _)| *pos)
        .min()
        .map_or(first_failure, |lock| lock.min(first_failure))
}

/// The task ID a scheduling event (activity, child, timer, send) records.
pub(crate) fn scheduled_task(event: &EventKind) -> Option<u64> {
    match event {
        EventKind::TaskScheduled { task_id, .. }
        | EventKind::SubOrchestrationCreated { task_id, .. }
        | EventKind::TimerCreated { task_id, .. }
        | EventKind::EventSent { task_id, .. } => Some(*task_id),
        _ => None,
    }
}

/// The request ID of an entity call or lock request (its answer is an event of that name).
fn entity_request_id(event: &EventKind) -> Option<String> {
    let EventKind::EventSent { name, input, .. } = event else {
        return None;
    };
    if name != ENTITY_REQUEST_EVENT {
        return None;
    }
    match input.parse::<EntityRequest>("entity request").ok()? {
        EntityRequest::Operation {
            id,
            caller: Some(_),
            ..
        }
        | EntityRequest::Lock { id, .. } => Some(id),
        _ => None,
    }
}

/// The activities and timers `kept` records as scheduled with no result, as actions that
/// send them again, and the children it waits for (with the failure rewind dropped, read
/// from the full `history`).
fn open_work(kept: &[HistoryEvent], history: &[HistoryEvent]) -> (Vec<Action>, Vec<OpenChild>) {
    let answered: HashSet<u64> = kept
        .iter()
        .filter_map(|e| completion_task_id(&e.event))
        .collect();
    let mut reopened = Vec::new();
    let mut children = Vec::new();
    for e in kept {
        match &e.event {
            EventKind::TaskScheduled {
                task_id,
                name,
                version,
                input,
                attempt,
                tags,
            } if !answered.contains(task_id) => reopened.push(Action::ScheduleActivity {
                task_id: *task_id,
                name: name.clone(),
                version: version.clone(),
                input: input.clone(),
                attempt: *attempt,
                tags: tags.clone(),
                traceparent: None,
            }),
            EventKind::TimerCreated { task_id, fire_at } if !answered.contains(task_id) => {
                reopened.push(Action::CreateTimer {
                    task_id: *task_id,
                    fire_at: *fire_at,
                });
            }
            EventKind::SubOrchestrationCreated {
                task_id,
                name,
                version,
                instance_id,
                input,
                tags,
            } if !answered.contains(task_id) => children.push(OpenChild {
                task_id: *task_id,
                instance_id: instance_id.clone(),
                name: name.clone(),
                version: version.clone(),
                input: input.clone(),
                tags: (**tags).clone(),
                failure: history.iter().find_map(|h| match &h.event {
                    EventKind::SubOrchestrationFailed {
                        task_id: t,
                        failure,
                    } if t == task_id => Some(failure.clone()),
                    _ => None,
                }),
            }),
            _ => {}
        }
    }
    (reopened, children)
}

#[cfg(test)]
#[path = "rewind_tests.rs"]
mod tests;
