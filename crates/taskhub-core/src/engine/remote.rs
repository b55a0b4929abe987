//! Turns decided by a remote executor: the execution's code runs elsewhere (an SDK worker of
//! another language), which replays the history itself and answers with [`Decision`]s.
//!
//! A remote turn is the Rust turn cut in two, around the executor's answer:
//! 1. [`OrchestrationSession::start_turn`] applies the new messages with the same rules as a
//!    Rust turn (the same code: de-duplication, stale executions, a finished instance,
//!    suspend/resume, terminate, the runtime's refusal) and records their events. When the
//!    code has something to decide it returns [`TurnStep::Decide`]; otherwise (nothing was
//!    applied, a terminate ended the execution, the runtime refused it) the turn is done.
//! 2. [`OrchestrationSession::finish_turn`] validates the decisions, all before any is
//!    recorded, and records them as the Rust code's actions are: `TaskScheduled`,
//!    `TimerCreated`, `SubOrchestrationCreated`, `EventSent`, then the execution's end, and
//!    the runtime [`Action`](crate::engine::Action)s. An impossible decision list fails the
//!    execution with a failure whose `error_type` names the broken [`DecisionRule`].
//!
//! The session keeps the execution's history (the `past` of the next turn) and which task IDs
//! the code used, so a completion is matched to an open task of the right kind as in a Rust
//! turn. A dropped [`PendingTurn`] leaves the session half-applied: the caller must drop the
//! session too and load it again from storage.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::engine::decision::{Decision, OrchestrationDecision};
use crate::engine::output::{Action, TurnInput, TurnResult};
use crate::engine::replay::corrupt;
use crate::engine::session::{completion_task_id, CodeResult, OrchestrationSession};
use crate::engine::turn::TurnOut;
use crate::history::{EventKind, FailureDetails, HistoryEvent};
use crate::ids::InstanceId;
use crate::orchestration::state::{lock, ContinueAsNewRequest, OpenTask, TaskKind};
use crate::time::Timestamp;

/// What a session whose code runs elsewhere keeps.
#[derive(Debug, Default)]
pub(crate) struct RemoteCode {
    /// The execution's history as committed (and as of the last turn); shared with the
    /// executor for the turn's question instead of copied.
    pub(crate) history: Arc<Vec<HistoryEvent>>,
    /// The task IDs the code used (scheduled work, timers, sends).
    pub(crate) used: HashSet<u64>,
    /// The last attempt of each activity and sub-orchestration task ID. The SDKs schedule a
    /// retry under the first attempt's task ID once its failure is in; each attempt's
    /// messages then carry the attempt in their message IDs (the runtime's outbox derives
    /// them so, and a sub-orchestration's child execution ID with them).
    pub(crate) attempts: HashMap<u64, u32>,
    /// The message IDs of the completions applied, so an earlier attempt's result that comes
    /// again is a duplicate rather than the result of a later attempt under the same task ID.
    pub(crate) results: HashSet<crate::ids::MessageId>,
    /// Activity and sub-orchestration task IDs whose last attempt failed, with their kind:
    /// the only IDs the code may use again, each for its own kind.
    pub(crate) failed: HashMap<u64, TaskKind>,
}

impl RemoteCode {
    /// True if `task_id` was a task of `kind` whose last attempt failed (and is not open
    /// again): the code may schedule it again, as a retry of the same kind.
    fn may_retry(&self, task_id: u64, kind: TaskKind, open: &HashSet<u64>) -> bool {
        self.failed.get(&task_id) == Some(&kind) && !open.contains(&task_id)
    }

    /// Notes an attempt of task `task_id` (decided, or replayed from history; `at_least`: the
    /// attempt the history names, if it does) and returns its number.
    fn attempt(&mut self, task_id: u64, at_least: u32) -> u32 {
        self.failed.remove(&task_id);
        let a = self.attempts.entry(task_id).or_insert(0);
        *a = a.saturating_add(1).max(at_least);
        *a
    }

    /// Notes an applied completion (as it is recorded, or replayed from history).
    pub(crate) fn completed(&mut self, event: &HistoryEvent) {
        if let Some(id) = &event.message_id {
            self.results.insert(id.clone());
        }
        match &event.event {
            EventKind::TaskFailed { task_id, .. } => {
                self.failed.insert(*task_id, TaskKind::Activity);
            }
            EventKind::SubOrchestrationFailed { task_id, .. } => {
                self.failed.insert(*task_id, TaskKind::SubOrchestration);
            }
            _ => {}
        }
    }
}

/// The first half of a turn: done, or waiting for a remote decision.
#[derive(Debug)]
pub enum TurnStep {
    /// The turn needed no decision (the code runs here, or nothing was applied, or the
    /// execution ended without its code: terminated or refused).
    Done(TurnResult),
    /// The remote code has to decide: send it [`PendingTurn::new_events`] after
    /// [`OrchestrationSession::remote_history`], then call
    /// [`OrchestrationSession::finish_turn`].
    Decide(PendingTurn),
}

/// A turn whose messages are applied and which waits for the remote code's decision.
#[derive(Debug)]
pub struct PendingTurn {
    out: TurnOut,
}

impl PendingTurn {
    /// The events this turn recorded so far, in order: `OrchestratorStarted`, then each
    /// applied message's event.
    #[must_use]
    pub fn new_events(&self) -> &[HistoryEvent] {
        &self.out.events
    }
}

/// A rule a remote decision list broke: the `error_type` of the execution's failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecisionRule {
    /// A task ID used twice in the execution (earlier, or in the same answer).
    DuplicateTaskId,
    /// An activity, sub-orchestration or event without a name.
    EmptyName,
    /// A timer without a time (the protocol's missing timestamp: the Unix epoch).
    TimerWithoutTime,
    /// A decision after the one that ended the execution.
    DecisionAfterEnd,
    /// A sub-orchestration with the instance's own ID.
    SubOrchestrationIsSelf,
}

impl DecisionRule {
    /// The rule's name: the failure's `error_type`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::DuplicateTaskId => "DuplicateTaskId",
            Self::EmptyName => "EmptyName",
            Self::TimerWithoutTime => "TimerWithoutTime",
            Self::DecisionAfterEnd => "DecisionAfterEnd",
            Self::SubOrchestrationIsSelf => "SubOrchestrationIsSelf",
        }
    }
}

impl OrchestrationSession {
    /// True when this execution's code runs elsewhere: its turns go through
    /// [`start_turn`](Self::start_turn) and [`finish_turn`](Self::finish_turn).
    #[must_use]
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The execution's history before the pending turn (empty for a Rust execution).
    #[must_use]
    pub fn remote_history(&self) -> &[HistoryEvent] {
        self.remote.as_ref().map_or(&[], |r| r.history.as_slice())
    }

    /// [`remote_history`](Self::remote_history) shared, not copied: a turn's question holds
    /// it while the session waits (the next turn appends in place once it is dropped).
    #[must_use]
    pub fn remote_history_shared(&self) -> Arc<Vec<HistoryEvent>> {
        self.remote
            .as_ref()
            .map_or_else(|| Arc::new(Vec::new()), |r| Arc::clone(&r.history))
    }

    /// Applies `input`'s messages. A Rust execution runs its code and the turn is
    /// [`Done`](TurnStep::Done) (as [`turn`](Self::turn)); a remote one whose code has
    /// something new to see waits for its decision ([`TurnStep::Decide`]).
    pub fn start_turn(&mut self, input: TurnInput) -> TurnStep {
        let out = self.begin(input);
        if self.remote.is_some() && self.needs_decision(&out) {
            TurnStep::Decide(PendingTurn { out })
        } else {
            TurnStep::Done(self.end(out))
        }
    }

    /// Records the remote code's `decision` for `pending` and closes the turn. Decisions are
    /// validated first: a list that breaks a [`DecisionRule`] records none of them and fails
    /// the execution instead.
    pub fn finish_turn(
        &mut self,
        pending: PendingTurn,
        decision: OrchestrationDecision,
    ) -> TurnResult {
        let mut out = pending.out;
        let instance = self.instance_id();
        if let Some(span) = &decision.span {
            self.span = Some((self.execution_id(), span.clone()));
        }
        let open: HashSet<u64> = lock(&self.state).open.keys().copied().collect();
        match check(&decision.decisions, self.remote.as_ref(), &open, &instance) {
            Err(failure) => self.code_result = Some(CodeResult::Failed(failure)),
            Ok(()) => self.apply_decisions(decision, &mut out),
        }
        self.end(out)
    }

    /// True if the remote code has something to decide after the messages in `out`.
    pub(crate) fn needs_decision(&self, out: &TurnOut) -> bool {
        self.started
            && self.finished.is_none()
            && self.code_result.is_none()
            && out.events.len() > 1
    }

    /// The failure of a remote execution's turn run without an executor.
    pub(crate) fn no_executor() -> FailureDetails {
        let mut f = FailureDetails::new(
            "NoExecutor",
            "the orchestration runs in a remote executor, and this turn was run without one",
        );
        f.non_retryable = true;
        f
    }

    fn apply_decisions(&mut self, decision: OrchestrationDecision, out: &mut TurnOut) {
        let mut terminate = None;
        {
            let mut st = lock(&self.state);
            if let Some(status) = decision.custom_status {
                st.custom_status = Some(status);
                st.custom_status_changed = true;
            }
            let mut used = Vec::new();
            for d in decision.decisions {
                let (task_id, kind, emitted) = match d {
                    Decision::ScheduleActivity {
                        task_id,
                        name,
                        version,
                        input,
                        tags,
                        traceparent,
                    } => {
                        let attempt = self.remote.as_mut().map_or(1, |r| r.attempt(task_id, 0));
                        (
                            task_id,
                            Some(TaskKind::Activity),
                            Action::ScheduleActivity {
                                task_id,
                                name,
                                version,
                                input,
                                attempt,
                                tags,
                                traceparent,
                            },
                        )
                    }
                    Decision::StartSubOrchestration {
                        task_id,
                        name,
                        version,
                        instance_id,
                        input,
                        tags,
                        traceparent,
                    } => {
                        let attempt = self.remote.as_mut().map_or(1, |r| r.attempt(task_id, 0));
                        (
                            task_id,
                            Some(TaskKind::SubOrchestration),
                            Action::StartSubOrchestration {
                                task_id,
                                name,
                                version,
                                instance_id,
                                input,
                                attempt,
                                tags,
                                traceparent,
                            },
                        )
                    }
                    Decision::CreateTimer { task_id, fire_at } => (
                        task_id,
                        Some(TaskKind::Timer),
                        Action::CreateTimer { task_id, fire_at },
                    ),
                    Decision::SendEvent {
                        task_id,
                        instance_id,
                        name,
                        input,
                    } => {
                        let after = st.previous_send(&instance_id, task_id);
                        (
                            task_id,
                            None,
                            Action::SendEvent {
                                task_id,
                                instance_id,
                                name,
                                input,
                                after,
                            },
                        )
                    }
                    Decision::Complete { result } => {
                        self.code_result = Some(CodeResult::Completed(result));
                        continue;
                    }
                    Decision::Fail { failure } => {
                        self.code_result = Some(CodeResult::Failed(failure));
                        continue;
                    }
                    Decision::ContinueAsNew {
                        input,
                        version,
                        carried_events,
                    } => {
                        // The remote code keeps its own unprocessed events and names them.
                        out.carried = carried_events;
                        self.code_result = Some(CodeResult::ContinueAsNew(ContinueAsNewRequest {
                            input,
                            version,
                            preserve_unprocessed_events: true,
                        }));
                        continue;
                    }
                    Decision::Terminate { reason } => {
                        // A JSON string is the reason (and, as a JSON string, the output);
                        // anything else is kept as the output as given, its text the reason.
                        terminate = Some(match reason.parse::<String>("reason") {
                            Ok(text) => (text, None),
                            Err(_) => (
                                reason.as_str().to_owned(),
                                (!reason.is_absent()).then_some(reason),
                            ),
                        });
                        continue;
                    }
                };
                st.emitted.push_back(emitted);
                st.next_task_id = st.next_task_id.max(task_id.saturating_add(1));
                if let Some(kind) = kind {
                    st.open.insert(
                        task_id,
                        OpenTask {
                            kind,
                            outcome: None,
                            waker: None,
                            abandoned: false,
                        },
                    );
                }
                used.push(task_id);
            }
            drop(st);
            if let Some(remote) = self.remote.as_mut() {
                remote.used.extend(used);
            }
        }
        if let Some((reason, output)) = terminate {
            // As a client's terminate: what the code did before it is recorded, then the
            // releases of the locks it still holds, then the end.
            self.release_remote_locks(out);
            self.flush_emitted(out);
            out.record(
                None,
                EventKind::ExecutionTerminated {
                    reason: reason.clone(),
                    output,
                },
            );
            self.finish_terminated(&reason, out);
        }
    }

    /// Replays one recorded event of a remote execution: no code runs; the open tasks and
    /// the used task IDs are rebuilt.
    pub(crate) fn replay_remote(
        &mut self,
        pos: usize,
        ev: &HistoryEvent,
    ) -> Result<(), FailureDetails> {
        let (task_id, kind) = match &ev.event {
            EventKind::OrchestratorStarted => {
                self.episode += 1;
                lock(&self.state).now = ev.timestamp;
                return Ok(());
            }
            EventKind::OrchestratorCompleted
            | EventKind::EventRaised { .. }
            | EventKind::ExecutionRewound { .. } => return Ok(()),
            EventKind::ExecutionStarted { .. } => {
                return Err(corrupt(pos, "a second ExecutionStarted"))
            }
            EventKind::ExecutionSuspended { .. } => {
                self.suspended = true;
                return Ok(());
            }
            EventKind::ExecutionResumed { .. } => {
                self.resume();
                return Ok(());
            }
            EventKind::TaskScheduled {
                task_id, attempt, ..
            } => {
                if let Some(remote) = self.remote.as_mut() {
                    remote.attempt(*task_id, *attempt);
                }
                (*task_id, Some(TaskKind::Activity))
            }
            EventKind::SubOrchestrationCreated { task_id, .. } => {
                // The event names no attempt: each one under the task ID is the next.
                if let Some(remote) = self.remote.as_mut() {
                    remote.attempt(*task_id, 0);
                }
                (*task_id, Some(TaskKind::SubOrchestration))
            }
            EventKind::TimerCreated { task_id, .. } => (*task_id, Some(TaskKind::Timer)),
            EventKind::EventSent { task_id, .. } => (*task_id, None),
            other => {
                if completion_task_id(other).is_none() {
                    return Err(corrupt(pos, other.type_name()));
                }
                if let Some(remote) = self.remote.as_mut() {
                    remote.completed(ev);
                }
                self.deliver(ev.clone());
                return Ok(());
            }
        };
        let mut st = lock(&self.state);
        st.next_task_id = st.next_task_id.max(task_id.saturating_add(1));
        if let Some(kind) = kind {
            st.open.insert(
                task_id,
                OpenTask {
                    kind,
                    outcome: None,
                    waker: None,
                    abandoned: false,
                },
            );
        }
        drop(st);
        if let Some(remote) = self.remote.as_mut() {
            remote.used.insert(task_id);
        }
        Ok(())
    }
}

/// Checks a decision list against the rules, before any of it is recorded.
fn check(
    decisions: &[Decision],
    remote: Option<&RemoteCode>,
    open: &HashSet<u64>,
    instance: &InstanceId,
) -> Result<(), FailureDetails> {
    let mut seen = HashSet::new();
    let mut ended = false;
    for (i, d) in decisions.iter().enumerate() {
        let fail = |rule: DecisionRule, why: String| Err(refused(i, d, rule, &why));
        if ended {
            return fail(
                DecisionRule::DecisionAfterEnd,
                "it comes after the decision that ended the execution".into(),
            );
        }
        let (task_id, name) = match d {
            Decision::ScheduleActivity { task_id, name, .. }
            | Decision::StartSubOrchestration { task_id, name, .. }
            | Decision::SendEvent { task_id, name, .. } => (Some(*task_id), Some(name)),
            Decision::CreateTimer { task_id, fire_at } => {
                if *fire_at == Timestamp::EPOCH {
                    return fail(
                        DecisionRule::TimerWithoutTime,
                        format!("timer {task_id} has no fire time"),
                    );
                }
                (Some(*task_id), None)
            }
            Decision::Complete { .. }
            | Decision::Fail { .. }
            | Decision::Terminate { .. }
            | Decision::ContinueAsNew { .. } => {
                ended = true;
                (None, None)
            }
        };
        if name.is_some_and(|n| n.trim().is_empty()) {
            return fail(DecisionRule::EmptyName, "the name is empty".into());
        }
        if let Decision::StartSubOrchestration { instance_id, .. } = d {
            if instance_id == instance {
                return fail(
                    DecisionRule::SubOrchestrationIsSelf,
                    format!(
                        "the sub-orchestration's instance ID is this instance's ('{instance}')"
                    ),
                );
            }
        }
        if let Some(id) = task_id {
            let kind = match d {
                Decision::ScheduleActivity { .. } => Some(TaskKind::Activity),
                Decision::StartSubOrchestration { .. } => Some(TaskKind::SubOrchestration),
                _ => None,
            };
            let retry = kind.is_some_and(|k| remote.is_some_and(|r| r.may_retry(id, k, open)));
            let reused = remote.is_some_and(|r| r.used.contains(&id)) && !retry;
            if reused || !seen.insert(id) {
                return fail(
                    DecisionRule::DuplicateTaskId,
                    format!("task ID {id} is already used in this execution"),
                );
            }
        }
    }
    Ok(())
}

/// The failure of an execution whose remote decision `i` broke `rule`.
fn refused(i: usize, d: &Decision, rule: DecisionRule, why: &str) -> FailureDetails {
    let kind = match d {
        Decision::ScheduleActivity { .. } => "ScheduleActivity",
        Decision::StartSubOrchestration { .. } => "StartSubOrchestration",
        Decision::CreateTimer { .. } => "CreateTimer",
        Decision::SendEvent { .. } => "SendEvent",
        Decision::Complete { .. } => "Complete",
        Decision::Fail { .. } => "Fail",
        Decision::Terminate { .. } => "Terminate",
        Decision::ContinueAsNew { .. } => "ContinueAsNew",
    };
    let mut f = FailureDetails::new(
        rule.name(),
        format!("invalid decision {i} ({kind}) from the remote executor: {why}"),
    );
    f.details = Some(
        "the runtime refused the executor's answer for this turn (none of its decisions was \
         recorded) and failed the orchestration"
            .to_owned(),
    );
    f.non_retryable = true;
    f
}
