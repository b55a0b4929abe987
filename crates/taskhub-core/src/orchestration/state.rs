//! The state shared by an orchestration's context (used by user code) and the engine: the
//! actions the code emitted, its open task slots and the mailbox of external events.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use crate::engine::Action;
use crate::history::{CarriedEvent, FailureDetails};
use crate::ids::{ExecutionId, InstanceId};
use crate::payload::Payload;
use crate::time::Timestamp;

/// Which kind of completion an open task expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskKind {
    Activity,
    SubOrchestration,
    Timer,
}

/// The result of a completed task: output, or the task's failure.
pub(crate) type TaskOutcome = Result<Payload, FailureDetails>;

/// A scheduled task waiting for its completion.
#[derive(Debug)]
pub(crate) struct OpenTask {
    pub kind: TaskKind,
    pub outcome: Option<TaskOutcome>,
    pub waker: Option<Waker>,
    /// The future was dropped: the completion is still recorded, then the slot is freed.
    pub abandoned: bool,
}

/// A log line written through the replay-safe logger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Severity.
    pub level: LogLevel,
    /// The text.
    pub message: String,
}

/// Severity of a [`LogRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Fine-grained detail.
    Debug,
    /// Normal progress.
    Info,
    /// Something unexpected that the code handled.
    Warn,
    /// A failure.
    Error,
}

/// The code's request to continue as new.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContinueAsNewRequest {
    pub input: Payload,
    pub version: Option<String>,
    pub preserve_unprocessed_events: bool,
}

/// A waiter for an external event.
#[derive(Debug)]
pub(crate) struct EventWaiter {
    pub name: String,
    pub value: Option<Payload>,
    pub waker: Option<Waker>,
}

/// External events that arrived and waiters for them.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    /// Arrived but unclaimed events per name, each with its global arrival number.
    pub buffered: HashMap<String, VecDeque<(u64, Payload)>>,
    /// Waiter IDs per name, in registration order.
    pub queues: HashMap<String, VecDeque<u64>>,
    pub waiters: HashMap<u64, EventWaiter>,
    pub next_waiter: u64,
    pub next_arrival: u64,
}

impl Mailbox {
    /// Delivers an event to the first waiter of that name, or buffers it.
    pub(crate) fn deliver(&mut self, name: &str, value: Payload) {
        if let Some(id) = self.queues.get_mut(name).and_then(VecDeque::pop_front) {
            if let Some(w) = self.waiters.get_mut(&id) {
                w.value = Some(value);
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
                return;
            }
        }
        let n = self.next_arrival;
        self.next_arrival += 1;
        self.buffered
            .entry(name.to_owned())
            .or_default()
            .push_back((n, value));
    }

    /// Registers a waiter; a buffered event of that name satisfies it at once.
    pub(crate) fn register(&mut self, name: &str) -> u64 {
        let id = self.next_waiter;
        self.next_waiter += 1;
        let value = self
            .buffered
            .get_mut(name)
            .and_then(VecDeque::pop_front)
            .map(|(_, v)| v);
        if value.is_none() {
            self.queues
                .entry(name.to_owned())
                .or_default()
                .push_back(id);
        }
        self.waiters.insert(
            id,
            EventWaiter {
                name: name.to_owned(),
                value,
                waker: None,
            },
        );
        id
    }

    /// Removes a waiter whose future was dropped. An event it received but never returned goes
    /// back to the front of the buffer, so it is not lost.
    pub(crate) fn unregister(&mut self, id: u64) {
        let Some(w) = self.waiters.remove(&id) else {
            return;
        };
        match w.value {
            Some(v) => {
                let buf = self.buffered.entry(w.name).or_default();
                let n = buf
                    .front()
                    .map_or(self.next_arrival, |(n, _)| n.saturating_sub(1));
                buf.push_front((n, v));
            }
            None => {
                if let Some(q) = self.queues.get_mut(&w.name) {
                    q.retain(|x| *x != id);
                }
            }
        }
    }

    /// Takes every buffered event, in arrival order (for continue-as-new).
    pub(crate) fn drain_buffered(&mut self) -> Vec<CarriedEvent> {
        let mut all: Vec<(u64, CarriedEvent)> = Vec::new();
        for (name, q) in self.buffered.drain() {
            for (n, input) in q {
                all.push((
                    n,
                    CarriedEvent {
                        name: name.clone(),
                        input,
                    },
                ));
            }
        }
        for w in self.waiters.values_mut() {
            if let Some(input) = w.value.take() {
                all.push((
                    0,
                    CarriedEvent {
                        name: w.name.clone(),
                        input,
                    },
                ));
            }
        }
        all.sort_by_key(|(n, _)| *n);
        all.into_iter().map(|(_, e)| e).collect()
    }
}

/// Everything the context and the engine share about one execution.
#[derive(Debug)]
pub(crate) struct State {
    pub instance_id: InstanceId,
    pub execution_id: ExecutionId,
    pub name: String,
    pub version: Option<String>,
    pub now: Timestamp,
    pub replaying: bool,
    pub next_task_id: u64,
    pub emitted: VecDeque<Action>,
    pub open: HashMap<u64, OpenTask>,
    pub mailbox: Mailbox,
    pub guid_counter: u64,
    pub custom_status: Option<Payload>,
    pub custom_status_changed: bool,
    pub logs: Vec<LogRecord>,
    pub continue_as_new: Option<ContinueAsNewRequest>,
    /// The entities the current critical section holds, with its lock request ID.
    pub held_locks: Option<(String, Vec<crate::entity::EntityId>)>,
    /// The last event sent to each instance: its task ID and when (orchestration time).
    pub last_sent: HashMap<InstanceId, (u64, Timestamp)>,
}

impl State {
    pub(crate) fn new(instance_id: InstanceId, execution_id: ExecutionId) -> Self {
        Self {
            instance_id,
            execution_id,
            name: String::new(),
            version: None,
            now: Timestamp::EPOCH,
            replaying: false,
            next_task_id: 0,
            emitted: VecDeque::new(),
            open: HashMap::new(),
            mailbox: Mailbox::default(),
            guid_counter: 0,
            custom_status: None,
            custom_status_changed: false,
            logs: Vec::new(),
            continue_as_new: None,
            held_locks: None,
            last_sent: HashMap::new(),
        }
    }

    /// The task ID of the previous event sent to `target`, if it was sent within
    /// [`SEND_ORDER_WINDOW`](crate::entity::order::SEND_ORDER_WINDOW); and records `task_id`
    /// as the latest. Deterministic: it depends only on the code's sends and orchestration
    /// time, so replay gives the same answers.
    pub(crate) fn previous_send(&mut self, target: &InstanceId, task_id: u64) -> Option<u64> {
        let now = self.now;
        self.last_sent
            .insert(target.clone(), (task_id, now))
            .filter(|(_, at)| now.saturating_since(*at) < crate::entity::order::SEND_ORDER_WINDOW)
            .map(|(t, _)| t)
    }

    /// After a rewind: sends before it name no successor (a send the rewind dropped goes
    /// again under new numbers, see the runtime's outbox), so the send-order memory starts
    /// afresh and the pending sends name no predecessor.
    pub(crate) fn forget_sends(&mut self) {
        self.last_sent.clear();
        for e in &mut self.emitted {
            if let Action::SendEvent { after, .. } = e {
                *after = None;
            }
        }
    }

    /// Records a new durable action and opens its completion slot.
    pub(crate) fn emit(&mut self, make: impl FnOnce(u64) -> Action, kind: Option<TaskKind>) -> u64 {
        let id = self.next_task_id;
        self.next_task_id += 1;
        self.emitted.push_back(make(id));
        if let Some(kind) = kind {
            self.open.insert(
                id,
                OpenTask {
                    kind,
                    outcome: None,
                    waker: None,
                    abandoned: false,
                },
            );
        }
        id
    }
}

/// Shared handle to [`State`].
pub(crate) type SharedState = Arc<Mutex<State>>;

/// The accessors of the execution's identity (instance, execution, name, version) for a type
/// that holds the [`SharedState`] in a field `state`: the session and the context the code
/// runs with read them alike.
macro_rules! identity_accessors {
    () => {
        /// The instance's ID.
        #[must_use]
        pub fn instance_id(&self) -> $crate::ids::InstanceId {
            $crate::orchestration::state::lock(&self.state)
                .instance_id
                .clone()
        }

        /// The current execution's ID (a placeholder before the instance started).
        #[must_use]
        pub fn execution_id(&self) -> $crate::ids::ExecutionId {
            $crate::orchestration::state::lock(&self.state)
                .execution_id
                .clone()
        }

        /// The orchestration's registered name (empty before the instance started).
        #[must_use]
        pub fn name(&self) -> String {
            $crate::orchestration::state::lock(&self.state).name.clone()
        }

        /// The version this execution was started with, if one was requested.
        #[must_use]
        pub fn version(&self) -> Option<String> {
            $crate::orchestration::state::lock(&self.state)
                .version
                .clone()
        }
    };
}
pub(crate) use identity_accessors;

/// Locks the state. User code never runs while the lock is held, so a poisoned lock can only
/// come from a panic inside this crate's own short critical sections; the data is still usable.
pub(crate) fn lock(state: &SharedState) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
