//! A live orchestration: replayed once from history, then driven turn by turn. One execution
//! held in memory: delivery of messages to the futures that wait for them, and polling.

use std::collections::{HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::engine::applied_ids::AppliedEventIds;
use crate::engine::output::Action;
use crate::engine::remote::RemoteCode;
use crate::engine::rewind::{self, RewindPlan};
use crate::error::CoreError;
use crate::history::{CarriedEvent, EventKind, FailureDetails, HistoryEvent, ParentInstance};
use crate::ids::{ExecutionId, InstanceId};
use crate::orchestration::context::OrchestrationContext;
use crate::orchestration::state::{
    identity_accessors, lock, ContinueAsNewRequest, SharedState, State,
};
use crate::payload::Payload;
use crate::registry::{OrchestrationFuture, Registry};
use crate::status::OrchestrationStatus;

/// How the orchestration code ended, before it is recorded.
#[derive(Debug, Clone)]
pub(crate) enum CodeResult {
    Completed(Payload),
    Failed(FailureDetails),
    ContinueAsNew(ContinueAsNewRequest),
}

impl CodeResult {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Self::Completed(_) => "completed",
            Self::Failed(_) => "failed",
            Self::ContinueAsNew(_) => "continued as new",
        }
    }
}

/// Records that the orchestration's future should be polled again.
#[derive(Debug, Default)]
pub(crate) struct WakeFlag(AtomicBool);

impl WakeFlag {
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.set();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.set();
    }
}

/// One execution of an orchestration, held in memory.
///
/// Build it from history with [`OrchestrationSession::load`], then call
/// [`turn`](OrchestrationSession::turn) for each batch of new messages. Keeping the session
/// between turns (an extended session) makes a turn cost O(new events): history is replayed
/// only once, at load.
pub struct OrchestrationSession {
    pub(crate) registry: Arc<Registry>,
    pub(crate) state: SharedState,
    pub(crate) future: Option<OrchestrationFuture>,
    pub(crate) wake: Arc<WakeFlag>,
    pub(crate) history_len: u64,
    pub(crate) episode: u64,
    pub(crate) started: bool,
    pub(crate) code_result: Option<CodeResult>,
    pub(crate) finished: Option<OrchestrationStatus>,
    pub(crate) suspended: bool,
    pub(crate) deferred: VecDeque<HistoryEvent>,
    pub(crate) deferred_tasks: HashSet<u64>,
    pub(crate) applied_event_ids: AppliedEventIds,
    pub(crate) parent: Option<ParentInstance>,
    pub(crate) fault: Option<FailureDetails>,
    /// A failure the runtime asked the next turn to end the execution with (see
    /// [`OrchestrationSession::refuse`]).
    pub(crate) refusal: Option<FailureDetails>,
    pub(crate) input: Payload,
    /// The trace context its `ExecutionStarted` was sent under (see [`HistoryEvent::trace`]).
    pub(crate) start_trace: Option<String>,
    /// True when an orchestration whose name is not in the registry runs elsewhere (a remote
    /// executor decides its turns) rather than failing as not registered.
    pub(crate) remote_fallback: bool,
    /// The execution's code runs elsewhere: what the session keeps for it (see
    /// [`remote`](crate::engine::remote)).
    pub(crate) remote: Option<RemoteCode>,
    /// The events this execution carried into the next one, once it continued as new (as
    /// recorded in its `ContinuedAsNew`; empty otherwise).
    pub(crate) carried: Vec<CarriedEvent>,
    /// The remote executor's span of an execution, as its last decision gave it, and that
    /// execution (a continue-as-new's next one starts without).
    pub(crate) span: Option<(ExecutionId, crate::engine::OrchestrationSpan)>,
    /// What rewinds let the code schedule again (see [`rewind`](crate::engine::rewind)).
    pub(crate) rewind: RewindState,
}

impl std::fmt::Debug for OrchestrationSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrchestrationSession")
            .field("instance_id", &self.instance_id())
            .field("history_len", &self.history_len)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// The placeholder execution ID before `ExecutionStarted` is applied.
fn unstarted_execution() -> ExecutionId {
    ExecutionId::new("unstarted").unwrap_or_else(|_| ExecutionId::random())
}

impl OrchestrationSession {
    /// The W3C trace context the execution was started under (its sender's span), if any:
    /// the parent of a turn woken by messages that carry none.
    #[must_use]
    pub fn start_trace(&self) -> Option<&str> {
        self.start_trace.as_deref()
    }

    /// The remote executor's span of this execution (see
    /// [`OrchestrationSpan`](crate::engine::OrchestrationSpan)), if its last decision gave one.
    #[must_use]
    pub fn span(&self) -> Option<&crate::engine::OrchestrationSpan> {
        let (execution, span) = self.span.as_ref()?;
        (*execution == self.execution_id()).then_some(span)
    }

    /// A session for an instance with no history yet.
    #[must_use]
    pub fn new(registry: Arc<Registry>, instance_id: InstanceId) -> Self {
        Self::new_with(registry, instance_id, false)
    }

    /// A session for an instance with no history yet; with `remote_fallback`, an
    /// orchestration whose name is not in `registry` is decided by a remote executor (see
    /// [`start_turn`](Self::start_turn)) instead of failing as not registered.
    #[must_use]
    pub fn new_with(
        registry: Arc<Registry>,
        instance_id: InstanceId,
        remote_fallback: bool,
    ) -> Self {
        Self {
            registry,
            state: Arc::new(Mutex::new(State::new(instance_id, unstarted_execution()))),
            future: None,
            wake: Arc::new(WakeFlag::default()),
            history_len: 0,
            episode: 0,
            started: false,
            code_result: None,
            finished: None,
            suspended: false,
            deferred: VecDeque::new(),
            deferred_tasks: HashSet::new(),
            applied_event_ids: AppliedEventIds::default(),
            parent: None,
            fault: None,
            refusal: None,
            input: Payload::null(),
            start_trace: None,
            remote_fallback,
            remote: None,
            carried: Vec::new(),
            span: None,
            rewind: RewindState::default(),
        }
    }

    /// Rebuilds a session by replaying `history` (one execution's events, in order).
    ///
    /// Never fails: if the code does not match the history, the session remembers the
    /// nondeterminism and its next turn fails the instance with an error naming the position,
    /// what history recorded and what the code did.
    #[must_use]
    pub fn load(
        registry: Arc<Registry>,
        instance_id: InstanceId,
        history: &[HistoryEvent],
    ) -> Self {
        Self::load_with(registry, instance_id, history, false)
    }

    /// [`load`](Self::load), with the `remote_fallback` of [`new_with`](Self::new_with): a
    /// remote execution's history is kept (it is sent with every turn) and not replayed
    /// through code.
    #[must_use]
    pub fn load_with(
        registry: Arc<Registry>,
        instance_id: InstanceId,
        history: &[HistoryEvent],
        remote_fallback: bool,
    ) -> Self {
        let mut session = Self::new_with(registry, instance_id, remote_fallback);
        session.replay(history);
        session
    }

    /// Rebuilds a failed execution's session rewound (see [`rewind`](crate::engine::rewind)):
    /// replays the kept history of `history`'s [`rewind::plan`]. The session's next turn
    /// applies the rewind request (an `ExecutionRewound` message): it records the event and
    /// sends again what the plan reopens, and the code schedules again what it dropped. The
    /// runtime replaces the stored history with `plan.kept` followed by that turn's events.
    ///
    /// # Errors
    /// [`CoreError::NotRewindable`] when `history` does not end in a failure.
    pub fn load_rewound(
        registry: Arc<Registry>,
        instance_id: InstanceId,
        history: &[HistoryEvent],
        remote_fallback: bool,
    ) -> Result<(Self, RewindPlan), CoreError> {
        let plan = rewind::plan(history)?;
        let mut session = Self::new_with(registry, instance_id, remote_fallback);
        session.rewind.pending = Some(PendingRewind {
            rewound_tasks: plan.rewound_tasks.clone(),
            reopened: plan.reopened.clone(),
        });
        session.replay(&plan.kept);
        Ok((session, plan))
    }

    /// True while a rewind request waits to be applied (see [`load_rewound`](Self::load_rewound)).
    #[must_use]
    pub fn is_rewinding(&self) -> bool {
        self.rewind.pending.is_some()
    }

    /// How many times this execution was rewound (its `ExecutionRewound` events). The runtime
    /// gives the work items it sends after a rewind new message IDs with it, so that a task
    /// scheduled again is not taken for a copy of the attempt that failed.
    #[must_use]
    pub fn rewinds(&self) -> u32 {
        self.rewind.count
    }

    identity_accessors!();

    /// The execution's input.
    #[must_use]
    pub fn input(&self) -> &Payload {
        &self.input
    }

    /// The parent, if this is a sub-orchestration.
    #[must_use]
    pub fn parent(&self) -> Option<&ParentInstance> {
        self.parent.as_ref()
    }

    /// The number of events in this execution's history, including those of past turns.
    #[must_use]
    pub fn history_len(&self) -> u64 {
        self.history_len
    }

    /// The number of turns recorded so far.
    #[must_use]
    pub fn episode(&self) -> u64 {
        self.episode
    }

    /// The current custom status.
    #[must_use]
    pub fn custom_status(&self) -> Option<Payload> {
        lock(&self.state).custom_status.clone()
    }

    /// The instance's status as of the last recorded event.
    #[must_use]
    pub fn status(&self) -> OrchestrationStatus {
        match self.finished {
            Some(s) => s,
            None if !self.started => OrchestrationStatus::Pending,
            None if self.suspended => OrchestrationStatus::Suspended,
            None => OrchestrationStatus::Running,
        }
    }

    /// After this execution continued as new: the external events it carried into the next
    /// execution, in order (empty otherwise). The runtime applies them right after the next
    /// execution's start, ahead of any event that arrives later (see the worker's
    /// `turn::carry`).
    #[must_use]
    pub fn carried_events(&self) -> &[CarriedEvent] {
        &self.carried
    }

    /// True once the execution has ended (completed, failed, terminated or continued as new).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// Makes the next turn fail the execution with `failure` instead of running its code (the
    /// runtime refuses it, e.g. its version does not match the worker's). A start applied in
    /// that turn is recorded and fails at once, as an orchestration that is not registered
    /// would (no code runs, nothing is scheduled); a running execution fails and the turn's
    /// messages are discarded.
    pub fn refuse(&mut self, failure: FailureDetails) {
        self.refusal = Some(failure);
    }

    /// Applies `ExecutionStarted`: creates the orchestration future and polls it once.
    pub(crate) fn start(&mut self, event: &EventKind) {
        let EventKind::ExecutionStarted {
            name,
            version,
            input,
            applied_event_ids,
            ..
        } = event
        else {
            return;
        };
        self.record_start_fields(event);
        for id in applied_event_ids {
            self.applied_event_ids.insert(id.clone());
        }
        if let Some(failure) = self.refusal.take() {
            self.code_result = Some(CodeResult::Failed(failure));
            return;
        }
        if self.remote_fallback && !self.registry.has_orchestration(name) {
            self.remote = Some(RemoteCode::default());
            return;
        }
        let ctx = OrchestrationContext::new(self.state.clone());
        match self
            .registry
            .start_orchestration(name, version.as_deref(), ctx, input.clone())
        {
            Ok(fut) => {
                self.future = Some(fut);
                self.wake.set();
                self.poll();
            }
            Err(failure) => self.code_result = Some(CodeResult::Failed(failure)),
        }
    }

    /// Polls the orchestration if something woke it; records how the code ended, if it did.
    pub(crate) fn poll(&mut self) {
        if self.code_result.is_some() || !self.wake.take() {
            return;
        }
        let Some(fut) = self.future.as_mut() else {
            return;
        };
        let waker = Waker::from(self.wake.clone());
        let mut cx = Context::from_waker(&waker);
        let result = match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
            Ok(Poll::Pending) => match lock(&self.state).continue_as_new.take() {
                Some(req) => CodeResult::ContinueAsNew(req),
                None => return,
            },
            Ok(Poll::Ready(Ok(output))) => CodeResult::Completed(output),
            Ok(Poll::Ready(Err(err))) => CodeResult::Failed(err.into_failure()),
            Err(panic) => CodeResult::Failed(FailureDetails::new("Panic", panic_message(&*panic))),
        };
        self.code_result = Some(result);
        self.future = None;
    }

    /// Hands a completion or external event to the code (or holds it while suspended).
    pub(crate) fn deliver(&mut self, event: HistoryEvent) {
        if self.remote.is_some() && completion_task_id(&event.event).is_none() {
            // Remote code reads raised events from the history it is sent.
            return;
        }
        if self.suspended {
            if let Some(id) = completion_task_id(&event.event) {
                self.deferred_tasks.insert(id);
            }
            self.deferred.push_back(event);
            return;
        }
        self.deliver_now(&event.event);
    }

    fn deliver_now(&mut self, event: &EventKind) {
        if self.remote.is_some() {
            // The remote code gets the completion with the turn's events: its task is closed.
            if let Some(task_id) = completion_task_id(event) {
                lock(&self.state).open.remove(&task_id);
            }
            return;
        }
        let mut st = lock(&self.state);
        match event {
            EventKind::EventRaised { name, input } => st.mailbox.deliver(name, input.clone()),
            other => {
                let Some((task_id, outcome)) = completion_outcome(other) else {
                    return;
                };
                let Some(slot) = st.open.get_mut(&task_id) else {
                    return;
                };
                if slot.abandoned {
                    st.open.remove(&task_id);
                } else {
                    slot.outcome = Some(outcome);
                    if let Some(w) = slot.waker.take() {
                        w.wake();
                    }
                }
            }
        }
        drop(st);
        self.poll();
    }

    /// Resumes a suspended execution: delivers what arrived meanwhile, in order.
    pub(crate) fn resume(&mut self) {
        self.suspended = false;
        self.deferred_tasks.clear();
        while let Some(ev) = self.deferred.pop_front() {
            self.deliver_now(&ev.event);
        }
    }
}

/// What rewinds let the code do differently in replay, and a rewind waiting to be applied.
#[derive(Debug, Default)]
pub(crate) struct RewindState {
    /// Actions the code took in replay before the last rewind that history records only after
    /// it (what the rewind dropped, or what the code reaches now that it dropped them).
    pub(crate) held: std::collections::BTreeMap<u64, Action>,
    /// The rewind the next turn applies.
    pub(crate) pending: Option<PendingRewind>,
    /// How many rewinds the execution's history records.
    pub(crate) count: u32,
    /// The position of the last rewind in the history replayed (the end, for a session loaded
    /// rewound): before it, replay may set actions aside; from it on, history is the truth.
    pub(crate) last_at: Option<usize>,
    /// The task IDs the history records before the last rewind.
    pub(crate) recorded: HashSet<u64>,
    /// The episode of the last rewind's turn: work sent before it (a result or a timer of
    /// work the rewind dropped, whose task ID the code may give other work now) is stale.
    pub(crate) episode: Option<u64>,
}

impl RewindState {
    /// Before replaying `history`: where its last rewind is and what it records before it.
    pub(crate) fn prepare_replay(&mut self, history: &[HistoryEvent]) {
        let last = history
            .iter()
            .rposition(|e| matches!(e.event, EventKind::ExecutionRewound { .. }));
        self.last_at = match (last, self.pending.is_some()) {
            (_, true) => Some(history.len()),
            (Some(at), false) => Some(at),
            (None, false) => None,
        };
        if let Some(at) = self.last_at {
            self.recorded = history
                .iter()
                .take(at)
                .filter_map(|e| crate::engine::rewind::scheduled_task(&e.event))
                .collect();
        }
        if let Some(at) = last {
            let episode = history
                .iter()
                .take(at)
                .filter(|e| matches!(e.event, EventKind::OrchestratorStarted))
                .count();
            self.episode = Some(u64::try_from(episode).unwrap_or(u64::MAX));
        }
    }

    /// Replaying position `pos`, before the last rewind?
    pub(crate) fn before_last(&self, pos: usize) -> bool {
        self.last_at.is_some_and(|at| pos < at)
    }

    /// May replay set aside the code's action of task `id` there: history does not record
    /// it before the last rewind.
    pub(crate) fn may_hold(&self, id: u64) -> bool {
        !self.recorded.contains(&id)
    }

    /// Is a result or timer of task `task_id` sent in `episode` stale: the task is one the
    /// code scheduled after the last rewind, and the message was sent before it?
    pub(crate) fn is_stale(&self, task_id: u64, episode: u64) -> bool {
        self.episode.is_some_and(|at| episode < at) && !self.recorded.contains(&task_id)
    }
}

/// A rewind the next turn applies.
#[derive(Debug)]
pub(crate) struct PendingRewind {
    /// Recorded in its `ExecutionRewound`.
    pub(crate) rewound_tasks: Vec<u64>,
    /// Sent again by it.
    pub(crate) reopened: Vec<Action>,
}

/// The task ID a completion event refers to.
pub(crate) fn completion_task_id(event: &EventKind) -> Option<u64> {
    match event {
        EventKind::TaskCompleted { task_id, .. }
        | EventKind::TaskFailed { task_id, .. }
        | EventKind::SubOrchestrationCompleted { task_id, .. }
        | EventKind::SubOrchestrationFailed { task_id, .. }
        | EventKind::TimerFired { task_id, .. } => Some(*task_id),
        _ => None,
    }
}

fn completion_outcome(event: &EventKind) -> Option<(u64, Result<Payload, FailureDetails>)> {
    Some(match event {
        EventKind::TaskCompleted { task_id, result }
        | EventKind::SubOrchestrationCompleted { task_id, result } => {
            (*task_id, Ok(result.clone()))
        }
        EventKind::TaskFailed { task_id, failure }
        | EventKind::SubOrchestrationFailed { task_id, failure } => {
            (*task_id, Err(failure.clone()))
        }
        EventKind::TimerFired { task_id, .. } => (*task_id, Ok(Payload::null())),
        _ => return None,
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned());
    format!("orchestration code panicked: {text}")
}
