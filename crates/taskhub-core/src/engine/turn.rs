//! Running one live turn: apply new messages, record new events, return actions.

use crate::engine::output::{Action, DiscardReason, Discarded, TurnInput, TurnResult};
use crate::engine::replay::kind_name;
use crate::engine::session::{completion_task_id, CodeResult, OrchestrationSession};
use crate::history::{CarriedEvent, EventKind, FailureDetails, HistoryEvent};
use crate::message::Message;
use crate::orchestration::state::{lock, TaskKind};
use crate::status::OrchestrationStatus;
use crate::time::Timestamp;

/// Collects a turn's output.
#[derive(Debug)]
pub(crate) struct TurnOut {
    pub(crate) now: Timestamp,
    pub(crate) events: Vec<HistoryEvent>,
    pub(crate) actions: Vec<Action>,
    pub(crate) discarded: Vec<Discarded>,
    pub(crate) carried: Vec<CarriedEvent>,
    pub(crate) dropped: Vec<CarriedEvent>,
}

impl TurnOut {
    pub(crate) fn record(&mut self, message: Option<&Message>, event: EventKind) {
        // A start keeps its sender's trace context: the execution's later turns join it.
        let trace = message
            .filter(|_| matches!(event, EventKind::ExecutionStarted { .. }))
            .and_then(|m| m.traceparent.clone());
        self.events.push(HistoryEvent {
            timestamp: self.now,
            message_id: message.map(|m| m.id.clone()),
            trace,
            event,
        });
    }

    fn discard(&mut self, m: &Message, reason: DiscardReason, detail: String) {
        self.discarded.push(Discarded {
            message_id: m.id.clone(),
            reason,
            detail,
        });
    }
}

impl OrchestrationSession {
    /// Applies new messages and runs the code as far as it can go.
    ///
    /// The returned events must be appended to history (they are already counted in
    /// [`history_len`](Self::history_len)); the actions must be carried out after that commit.
    /// A turn that applies nothing returns no events.
    ///
    /// A session whose code runs elsewhere (see [`start_turn`](Self::start_turn)) cannot
    /// decide here: its turn records the messages and a failure naming the missing decision.
    pub fn turn(&mut self, input: TurnInput) -> TurnResult {
        let out = self.begin(input);
        if self.remote.is_some() && self.needs_decision(&out) {
            self.code_result = Some(CodeResult::Failed(Self::no_executor()));
        }
        self.end(out)
    }

    /// The first half of a turn, shared by the Rust code and remote code: records
    /// `OrchestratorStarted` and applies each message (or discards it with a reason), running
    /// the Rust code as messages wake it.
    pub(crate) fn begin(&mut self, input: TurnInput) -> TurnOut {
        let mut out = TurnOut {
            now: input.now,
            events: vec![HistoryEvent::new(input.now, EventKind::OrchestratorStarted)],
            actions: Vec::new(),
            discarded: Vec::new(),
            carried: Vec::new(),
            dropped: Vec::new(),
        };
        lock(&self.state).now = input.now;
        let mut messages = input.messages;
        // ExecutionStarted goes first, so events raised in the same batch find a started instance.
        messages.sort_by_key(|m| !matches!(m.event, EventKind::ExecutionStarted { .. }));
        // A rewound session's first turn applies the rewind before anything else.
        if self.rewind.pending.is_some() {
            let request = messages
                .iter()
                .position(|m| matches!(m.event, EventKind::ExecutionRewound { .. }));
            if let Some(i) = request {
                let m = messages.remove(i);
                self.apply_rewind(&m, &mut out);
            }
        }

        if self.started && self.finished.is_none() {
            if let Some(refusal) = self.refusal.take() {
                self.fault.get_or_insert(refusal);
            }
        }
        if let Some(fault) = self.fault.take() {
            for m in &messages {
                out.discard(
                    m,
                    DiscardReason::InstanceFinished,
                    format!("instance failed: {}", fault.error_type),
                );
            }
            self.code_result = Some(CodeResult::Failed(fault));
        } else {
            for m in &messages {
                self.apply_message(m, &mut out);
            }
        }
        out
    }

    /// The second half of a turn: records what the code did (its actions, then how it ended)
    /// and closes the turn with `OrchestratorCompleted`.
    pub(crate) fn end(&mut self, mut out: TurnOut) -> TurnResult {
        if self.code_result.is_some() {
            // The code is done with (returned, failed, refused, continued as new): dropping it
            // now lets a critical section or a lock request it still holds send its releases
            // in this turn.
            self.future = None;
            if self.finished.is_none() {
                // Remote code has no guards: the runtime releases what it still holds.
                self.release_remote_locks(&out);
            }
        }
        self.flush_emitted(&mut out);
        self.record_finish(&mut out);

        let (custom_status, logs) = {
            let mut st = lock(&self.state);
            let cs = std::mem::take(&mut st.custom_status_changed)
                .then(|| st.custom_status.clone())
                .flatten();
            (cs, std::mem::take(&mut st.logs))
        };
        let mut new_events = out.events;
        if new_events.len() == 1 {
            new_events.clear();
        } else {
            new_events.push(HistoryEvent::new(out.now, EventKind::OrchestratorCompleted));
            self.episode += 1;
        }
        self.history_len += new_events.len() as u64;
        if let Some(remote) = self.remote.as_mut() {
            // Not copied unless an executor still holds the last turn's history.
            std::sync::Arc::make_mut(&mut remote.history).extend(new_events.iter().cloned());
        }
        TurnResult {
            new_events,
            actions: out.actions,
            custom_status,
            logs,
            discarded: out.discarded,
            status: Some(self.status()),
        }
    }

    fn apply_message(&mut self, m: &Message, out: &mut TurnOut) {
        if let Some(status) = self.finished {
            if status == OrchestrationStatus::ContinuedAsNew && self.is_for_next_execution(m) {
                return out.discard(
                    m,
                    DiscardReason::AwaitingNextExecution,
                    "the execution continued as new; the next one has not started yet".into(),
                );
            }
            return out.discard(
                m,
                DiscardReason::InstanceFinished,
                format!("instance is {status}"),
            );
        }
        if matches!(m.event, EventKind::ExecutionRewound { .. }) {
            return self.apply_rewind(m, out);
        }
        if let Some(CodeResult::ContinueAsNew(req)) = &self.code_result {
            // Arrived in the turn that continued as new: unprocessed by this execution.
            if let EventKind::EventRaised { name, input } = &m.event {
                if !self.applied_event_ids.insert(m.id.clone()) {
                    return out.discard(
                        m,
                        DiscardReason::Duplicate,
                        format!("event message {} already applied", m.id),
                    );
                }
                let event = CarriedEvent {
                    name: name.clone(),
                    input: input.clone(),
                };
                if req.preserve_unprocessed_events {
                    out.carried.push(event);
                    return;
                }
                out.dropped.push(event);
                return out.discard(
                    m,
                    DiscardReason::InstanceFinished,
                    format!(
                        "event '{name}' dropped by continue-as-new without preserving \
                         unprocessed events (recorded in ContinuedAsNew)"
                    ),
                );
            }
            if self.is_for_next_execution(m) {
                return out.discard(
                    m,
                    DiscardReason::AwaitingNextExecution,
                    "the execution continued as new in this turn".into(),
                );
            }
        }
        if self.code_result.is_some() {
            return out.discard(
                m,
                DiscardReason::InstanceFinished,
                "orchestration already finished in this turn".into(),
            );
        }
        if let EventKind::ExecutionStarted { execution_id, .. } = &m.event {
            if self.started {
                return out.discard(
                    m,
                    DiscardReason::Duplicate,
                    format!("duplicate ExecutionStarted (execution {execution_id})"),
                );
            }
            out.record(Some(m), m.event.clone());
            self.start(&m.event);
            self.start_trace.clone_from(&m.traceparent);
            return;
        }
        if !self.started {
            return out.discard(
                m,
                DiscardReason::NotStarted,
                "instance has not started yet".into(),
            );
        }
        let current = lock(&self.state).execution_id.clone();
        if m.execution_id.as_ref().is_some_and(|e| *e != current) {
            return out.discard(
                m,
                DiscardReason::StaleExecution,
                format!("message is for another execution (current {current})"),
            );
        }
        match &m.event {
            EventKind::ExecutionTerminated { reason, .. } => {
                self.give_up_locks(out);
                out.record(Some(m), m.event.clone());
                self.finish_terminated(reason, out);
            }
            EventKind::ExecutionSuspended { .. } => {
                if self.suspended {
                    return out.discard(
                        m,
                        DiscardReason::Duplicate,
                        "instance is already suspended".into(),
                    );
                }
                out.record(Some(m), m.event.clone());
                self.suspended = true;
            }
            EventKind::ExecutionResumed { .. } => {
                if !self.suspended {
                    return out.discard(
                        m,
                        DiscardReason::Duplicate,
                        "instance is not suspended".into(),
                    );
                }
                out.record(Some(m), m.event.clone());
                self.resume();
            }
            EventKind::EventRaised { .. } => {
                if !self.applied_event_ids.insert(m.id.clone()) {
                    return out.discard(
                        m,
                        DiscardReason::Duplicate,
                        format!("event message {} already applied", m.id),
                    );
                }
                out.record(Some(m), m.event.clone());
                self.deliver(
                    out.events
                        .last()
                        .cloned()
                        .unwrap_or_else(|| HistoryEvent::new(out.now, m.event.clone())),
                );
            }
            other => match completion_task_id(other) {
                Some(task_id) => self.apply_completion(m, task_id, out),
                None => out.discard(
                    m,
                    DiscardReason::Invalid,
                    format!(
                        "{} is not a message an orchestration can receive",
                        other.type_name()
                    ),
                ),
            },
        }
    }

    /// Applies a rewind request: in a session loaded rewound, records `ExecutionRewound` and
    /// sends again the work the rewind reopened; anywhere else the request is discarded.
    fn apply_rewind(&mut self, m: &Message, out: &mut TurnOut) {
        let Some(pending) = self.rewind.pending.take() else {
            return out.discard(
                m,
                DiscardReason::Invalid,
                format!(
                    "only a Failed instance can be rewound; this one is {}",
                    self.status()
                ),
            );
        };
        let reason = match &m.event {
            EventKind::ExecutionRewound { reason, .. } => reason.clone(),
            _ => None,
        };
        out.record(
            Some(m),
            EventKind::ExecutionRewound {
                reason,
                rewound_tasks: pending.rewound_tasks,
            },
        );
        out.actions.extend(pending.reopened);
        self.rewind.count = self.rewind.count.saturating_add(1);
        // This turn's episode: what was sent before it is stale for the tasks it reopens to
        // the code (`RewindState::is_stale`).
        self.rewind.episode = Some(self.episode.saturating_add(1));
        lock(&self.state).forget_sends();
    }

    fn apply_completion(&mut self, m: &Message, task_id: u64, out: &mut TurnOut) {
        let expected = match &m.event {
            EventKind::TimerFired { .. } => TaskKind::Timer,
            EventKind::SubOrchestrationCompleted { .. }
            | EventKind::SubOrchestrationFailed { .. } => TaskKind::SubOrchestration,
            _ => TaskKind::Activity,
        };
        let (open_kind, next_id) = {
            let st = lock(&self.state);
            (st.open.get(&task_id).map(|t| t.kind), st.next_task_id)
        };
        // Remote code names its own task IDs: a closed task is one it used.
        let used = match &self.remote {
            Some(remote) => remote.used.contains(&task_id),
            None => task_id < next_id,
        };
        // A retried task's earlier result, come again (remote code reuses the task ID).
        let seen = self
            .remote
            .as_ref()
            .is_some_and(|r| r.results.contains(&m.id));
        // A result or timer of work a rewind dropped, whose task ID the code gave other work.
        let own = matches!(
            m.event,
            EventKind::TaskCompleted { .. }
                | EventKind::TaskFailed { .. }
                | EventKind::TimerFired { .. }
        );
        if own && m.episode > 0 && self.rewind.is_stale(task_id, m.episode) {
            return out.discard(
                m,
                DiscardReason::StaleExecution,
                format!("task {task_id}'s message was sent before the execution was rewound"),
            );
        }
        if seen || self.deferred_tasks.contains(&task_id) || (open_kind.is_none() && used) {
            return out.discard(
                m,
                DiscardReason::Duplicate,
                format!("task {task_id} already completed"),
            );
        }
        if open_kind != Some(expected) {
            return out.discard(
                m,
                DiscardReason::Invalid,
                format!(
                    "{} refers to task {task_id}, which is not an open {}",
                    m.event.type_name(),
                    kind_name(expected)
                ),
            );
        }
        out.record(Some(m), m.event.clone());
        if let (Some(remote), Some(recorded)) = (self.remote.as_mut(), out.events.last()) {
            remote.completed(recorded);
        }
        self.deliver(
            out.events
                .last()
                .cloned()
                .unwrap_or_else(|| HistoryEvent::new(out.now, m.event.clone())),
        );
    }

    /// Records the code's new actions as history events and actions, in order.
    pub(crate) fn flush_emitted(&mut self, out: &mut TurnOut) {
        let emitted: Vec<Action> = lock(&self.state).emitted.drain(..).collect();
        for action in emitted {
            // The trace context the code gave the work it starts (an SDK's
            // `parentTraceContext`), kept with the event so that a replay sends it back.
            let trace = match &action {
                Action::ScheduleActivity { traceparent, .. }
                | Action::StartSubOrchestration { traceparent, .. } => traceparent.clone(),
                _ => None,
            };
            if let Some(event) = action.recorded_event() {
                out.record(None, event);
                if let Some(last) = out.events.last_mut() {
                    last.trace = trace;
                }
            }
            out.actions.push(action);
        }
    }

    /// Records how the code ended, if it did during this turn.
    fn record_finish(&mut self, out: &mut TurnOut) {
        if self.finished.is_some() {
            return;
        }
        let Some(result) = self.code_result.clone() else {
            return;
        };
        self.finished = Some(result.status());
        let parent = self.parent.clone();
        match result {
            CodeResult::Completed(result) => {
                out.record(
                    None,
                    EventKind::ExecutionCompleted {
                        result: result.clone(),
                    },
                );
                out.actions.push(Action::Complete {
                    result: result.clone(),
                });
                if let Some(parent) = parent {
                    let event = EventKind::SubOrchestrationCompleted {
                        task_id: parent.task_id,
                        result,
                    };
                    out.actions.push(Action::NotifyParent { parent, event });
                }
            }
            CodeResult::Failed(failure) => self.record_failure(failure, out),
            CodeResult::ContinueAsNew(req) => {
                // Unprocessed events: buffered in the mailbox, held while suspended, and
                // arrived in this turn after the code continued as new; in arrival order.
                let mut unprocessed = lock(&self.state).mailbox.drain_buffered();
                for ev in self.deferred.drain(..) {
                    if let EventKind::EventRaised { name, input } = ev.event {
                        unprocessed.push(CarriedEvent { name, input });
                    }
                }
                let (carried, dropped) = if req.preserve_unprocessed_events {
                    unprocessed.append(&mut out.carried);
                    (unprocessed, Vec::new())
                } else {
                    unprocessed.append(&mut out.dropped);
                    (Vec::new(), unprocessed)
                };
                out.record(
                    None,
                    EventKind::ContinuedAsNew {
                        input: req.input.clone(),
                        version: req.version.clone(),
                        carried_events: carried.clone(),
                        dropped_events: dropped,
                    },
                );
                self.carried.clone_from(&carried);
                let execution_id = lock(&self.state).execution_id.next_generation();
                out.actions.push(Action::ContinueAsNew {
                    execution_id,
                    input: req.input,
                    version: req.version.or_else(|| lock(&self.state).version.clone()),
                    carried_events: carried,
                    parent,
                    applied_event_ids: self.applied_event_ids.recent(),
                });
            }
        }
        self.future = None;
    }

    /// Is `m` for the instance's next execution rather than for this one, once this one
    /// continued as new? External events always are; a terminate, suspend or resume is unless
    /// it names this execution. Completions belong to the execution that scheduled them.
    fn is_for_next_execution(&self, m: &Message) -> bool {
        match &m.event {
            EventKind::EventRaised { .. } => true,
            EventKind::ExecutionTerminated { .. }
            | EventKind::ExecutionSuspended { .. }
            | EventKind::ExecutionResumed { .. } => {
                let current = lock(&self.state).execution_id.clone();
                m.execution_id.as_ref().is_none_or(|e| *e != current)
            }
            _ => false,
        }
    }

    fn record_failure(&mut self, failure: FailureDetails, out: &mut TurnOut) {
        out.record(
            None,
            EventKind::ExecutionFailed {
                failure: failure.clone(),
            },
        );
        out.actions.push(Action::Fail {
            failure: failure.clone(),
        });
        if let Some(parent) = self.parent.clone() {
            let event = EventKind::SubOrchestrationFailed {
                task_id: parent.task_id,
                failure,
            };
            out.actions.push(Action::NotifyParent { parent, event });
        }
    }

    /// Before a terminate ends the execution: drops the code, so that a critical section it
    /// holds or a lock request it waits for sends its releases, and records the events the
    /// code sent in this turn (those releases, and any it sent before the terminate came)
    /// before the terminal event; every other action it had emitted in this turn is dropped.
    fn give_up_locks(&mut self, out: &mut TurnOut) {
        self.future = None;
        {
            let mut st = lock(&self.state);
            st.emitted.retain(|e| matches!(e, Action::SendEvent { .. }));
        }
        self.release_remote_locks(out);
        self.flush_emitted(out);
    }

    pub(crate) fn finish_terminated(&mut self, reason: &str, out: &mut TurnOut) {
        self.finished = Some(OrchestrationStatus::Terminated);
        self.future = None;
        lock(&self.state).emitted.clear();
        if let Some(parent) = self.parent.clone() {
            let failure = FailureDetails::new(
                "Terminated",
                format!("sub-orchestration was terminated: {reason}"),
            );
            let event = EventKind::SubOrchestrationFailed {
                task_id: parent.task_id,
                failure,
            };
            out.actions.push(Action::NotifyParent { parent, event });
        }
    }
}
