//! Replaying recorded history, with nondeterminism detection.
//!
//! Recorded events are applied as a live turn applies them, but recorded actions are
//! *matched*: the next recorded `TaskScheduled` / `SubOrchestrationCreated` / `TimerCreated` /
//! `EventSent` must be the code's next action (same kind, name and task ID), and at each
//! recorded `OrchestratorCompleted` the code must have no unrecorded action and must not have
//! returned. A mismatch fails the instance with `event N: history has …, code …`.

use crate::engine::output::Action;
use crate::engine::rewind::scheduled_task;
use crate::engine::session::{completion_task_id, CodeResult, OrchestrationSession};
use crate::history::{EventKind, FailureDetails, HistoryEvent};
use crate::orchestration::state::{lock, TaskKind};
use crate::status::OrchestrationStatus;

impl OrchestrationSession {
    /// Replays `history` into this (fresh) session.
    pub(crate) fn replay(&mut self, history: &[HistoryEvent]) {
        lock(&self.state).replaying = true;
        self.rewind.prepare_replay(history);
        self.rewind.count = history
            .iter()
            .filter(|e| matches!(e.event, EventKind::ExecutionRewound { .. }))
            .count()
            .try_into()
            .unwrap_or(u32::MAX);
        // A finished execution is not re-run: its outcome is already recorded.
        if let Some(status) = history.iter().rev().find_map(|e| terminal_status(&e.event)) {
            // The start is not the first event: an OrchestratorStarted precedes it.
            if let Some(start) = history
                .iter()
                .find(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
            {
                self.record_start_fields(&start.event);
                self.start_trace.clone_from(&start.trace);
            }
            self.finished = Some(status);
            if let Some(EventKind::ContinuedAsNew { carried_events, .. }) = history
                .iter()
                .rev()
                .map(|e| &e.event)
                .find(|e| terminal_status(e).is_some())
            {
                self.carried.clone_from(carried_events);
            }
            self.history_len = history.len() as u64;
            self.episode = count_episodes(history);
            lock(&self.state).replaying = false;
            return;
        }
        for (pos, ev) in history.iter().enumerate() {
            self.history_len += 1;
            if self.fault.is_some() {
                continue;
            }
            if let Err(fault) = self.replay_event(pos, ev) {
                self.fault = Some(fault);
                self.future = None;
            }
        }
        if let Some(remote) = self.remote.as_mut() {
            remote.history = std::sync::Arc::new(history.to_vec());
        }
        self.release_held();
        lock(&self.state).replaying = false;
    }

    /// After replay: the actions of rewound tasks the code took and history has not recorded
    /// again are the code's next actions, recorded by the next turn (in task ID order, ahead
    /// of what the code does then).
    fn release_held(&mut self) {
        let held = std::mem::take(&mut self.rewind.held);
        if held.is_empty() {
            return;
        }
        let mut st = lock(&self.state);
        for (_, emitted) in held.into_iter().rev() {
            st.emitted.push_front(emitted);
        }
    }

    /// Before the last rewind (see [`RewindState::may_hold`]): sets aside the code's actions
    /// that history did not record there (what the rewind dropped, and what the code does
    /// differently now that it dropped them); they are recorded after the rewind.
    fn hold_rewound(&mut self, pos: usize, except: Option<u64>) {
        if !self.rewind.before_last(pos) {
            return;
        }
        let mut st = lock(&self.state);
        let mut kept = std::collections::VecDeque::with_capacity(st.emitted.len());
        for e in st.emitted.drain(..) {
            let held = e
                .task_id()
                .filter(|&id| Some(id) != except && self.rewind.may_hold(id));
            if let Some(id) = held {
                self.rewind.held.insert(id, e);
            } else {
                kept.push_back(e);
            }
        }
        st.emitted = kept;
    }

    /// Takes what `ExecutionStarted` says about the execution (its name, version, input, ID and
    /// parent) into the session; marks it started.
    pub(super) fn record_start_fields(&mut self, event: &EventKind) {
        if let EventKind::ExecutionStarted {
            name,
            version,
            input,
            execution_id,
            parent,
            ..
        } = event
        {
            self.started = true;
            self.parent.clone_from(parent);
            self.input = input.clone();
            let mut st = lock(&self.state);
            st.name.clone_from(name);
            st.version.clone_from(version);
            st.execution_id = execution_id.clone();
        }
    }

    fn replay_event(&mut self, pos: usize, ev: &HistoryEvent) -> Result<(), FailureDetails> {
        if let Some(id) = &ev.message_id {
            if matches!(ev.event, EventKind::EventRaised { .. }) {
                self.applied_event_ids.insert(id.clone());
            }
        }
        if self.remote.is_some() {
            return self.replay_remote(pos, ev);
        }
        match &ev.event {
            EventKind::OrchestratorStarted => {
                self.episode += 1;
                lock(&self.state).now = ev.timestamp;
            }
            EventKind::OrchestratorCompleted => self.check_episode_end(pos)?,
            start @ EventKind::ExecutionStarted { .. } => {
                if self.started {
                    return Err(corrupt(pos, "a second ExecutionStarted"));
                }
                self.start(start);
                self.start_trace.clone_from(&ev.trace);
            }
            EventKind::TaskScheduled { .. }
            | EventKind::SubOrchestrationCreated { .. }
            | EventKind::TimerCreated { .. }
            | EventKind::EventSent { .. } => self.match_emitted(pos, &ev.event)?,
            EventKind::ExecutionSuspended { .. } => self.suspended = true,
            EventKind::ExecutionResumed { .. } => self.resume(),
            EventKind::EventRaised { .. } => self.deliver(ev.clone()),
            EventKind::ExecutionRewound { .. } => lock(&self.state).forget_sends(),
            other => {
                let Some(task_id) = completion_task_id(other) else {
                    // Terminal events are handled before the loop; nothing else exists.
                    return Err(corrupt(pos, other.type_name()));
                };
                let expected = expected_kind(other);
                let known = lock(&self.state).open.get(&task_id).map(|t| t.kind);
                if known != Some(expected) && !self.deferred_tasks.contains(&task_id) {
                    return Err(nondeterminism(
                        pos,
                        &other.describe(),
                        &format!("has no open {} with task ID {task_id}", kind_name(expected)),
                    ));
                }
                self.deliver(ev.clone());
            }
        }
        Ok(())
    }

    /// A recorded action must be the next action the code took, of the same kind and name.
    fn match_emitted(&mut self, pos: usize, recorded: &EventKind) -> Result<(), FailureDetails> {
        let recorded_id = scheduled_task(recorded);
        // A rewound task recorded again after its rewind: the code took it earlier.
        let held = recorded_id.and_then(|id| self.rewind.held.remove(&id));
        if held.is_none() {
            self.hold_rewound(pos, recorded_id);
        }
        let next = held.or_else(|| lock(&self.state).emitted.pop_front());
        let Some(emitted) = next else {
            let code = match &self.code_result {
                Some(r) => r.describe().to_owned(),
                None => "scheduled nothing more".to_owned(),
            };
            return Err(nondeterminism(pos, &recorded.describe(), &code));
        };
        let same = match (recorded, &emitted) {
            (
                EventKind::TaskScheduled { task_id, name, .. },
                Action::ScheduleActivity {
                    task_id: t,
                    name: n,
                    ..
                },
            )
            | (
                EventKind::SubOrchestrationCreated { task_id, name, .. },
                Action::StartSubOrchestration {
                    task_id: t,
                    name: n,
                    ..
                },
            )
            | (
                EventKind::EventSent { task_id, name, .. },
                Action::SendEvent {
                    task_id: t,
                    name: n,
                    ..
                },
            ) => task_id == t && name == n,
            (EventKind::TimerCreated { task_id, .. }, Action::CreateTimer { task_id: t, .. }) => {
                task_id == t
            }
            _ => false,
        };
        if same {
            Ok(())
        } else {
            Err(nondeterminism(
                pos,
                &recorded.describe(),
                &emitted.describe(),
            ))
        }
    }

    /// At the end of a recorded turn the code must have no unrecorded actions and must not
    /// have finished (a finish is recorded before `OrchestratorCompleted`).
    fn check_episode_end(&mut self, pos: usize) -> Result<(), FailureDetails> {
        self.hold_rewound(pos, None);
        let extra = lock(&self.state).emitted.front().map(Action::describe);
        if let Some(extra) = extra {
            return Err(nondeterminism(pos, "OrchestratorCompleted", &extra));
        }
        if let Some(result) = &self.code_result {
            return Err(nondeterminism(
                pos,
                "OrchestratorCompleted",
                result.describe(),
            ));
        }
        Ok(())
    }
}

fn terminal_status(event: &EventKind) -> Option<OrchestrationStatus> {
    Some(match event {
        EventKind::ExecutionCompleted { .. } => OrchestrationStatus::Completed,
        EventKind::ExecutionFailed { .. } => OrchestrationStatus::Failed,
        EventKind::ExecutionTerminated { .. } => OrchestrationStatus::Terminated,
        EventKind::ContinuedAsNew { .. } => OrchestrationStatus::ContinuedAsNew,
        _ => return None,
    })
}

fn count_episodes(history: &[HistoryEvent]) -> u64 {
    history
        .iter()
        .filter(|e| matches!(e.event, EventKind::OrchestratorStarted))
        .count() as u64
}

fn expected_kind(event: &EventKind) -> TaskKind {
    match event {
        EventKind::SubOrchestrationCompleted { .. } | EventKind::SubOrchestrationFailed { .. } => {
            TaskKind::SubOrchestration
        }
        EventKind::TimerFired { .. } => TaskKind::Timer,
        _ => TaskKind::Activity,
    }
}

pub(crate) fn kind_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Activity => "activity",
        TaskKind::SubOrchestration => "sub-orchestration",
        TaskKind::Timer => "timer",
    }
}

/// The failure recorded for nondeterministic code: "event 7: history has TaskScheduled
/// 'Charge', code scheduled activity 'Refund'".
pub(crate) fn nondeterminism(pos: usize, history: &str, code: &str) -> FailureDetails {
    let mut f = FailureDetails::new(
        "NonDeterminism",
        format!("event {pos}: history has {history}, code {code}"),
    );
    f.details = Some(
        "the orchestration code took a different path than when this history was recorded; \
         orchestration code must be deterministic (use ctx.now(), ctx.new_guid() and versions)"
            .to_owned(),
    );
    f.non_retryable = true;
    f
}

pub(crate) fn corrupt(pos: usize, what: &str) -> FailureDetails {
    let mut f = FailureDetails::new(
        "CorruptHistory",
        format!("event {pos}: unexpected {what} in history"),
    );
    f.non_retryable = true;
    f
}

impl CodeResult {
    /// The status recorded when this result is committed.
    pub(crate) fn status(&self) -> OrchestrationStatus {
        match self {
            Self::Completed(_) => OrchestrationStatus::Completed,
            Self::Failed(_) => OrchestrationStatus::Failed,
            Self::ContinueAsNew(_) => OrchestrationStatus::ContinuedAsNew,
        }
    }
}
