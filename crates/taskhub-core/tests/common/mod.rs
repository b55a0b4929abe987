//! A tiny in-memory driver for engine tests: it plays the runtime's role on plain data.
#![allow(
    dead_code,
    missing_docs,
    clippy::unwrap_used,
    reason = "shared test support"
)]

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use taskhub_core::*;

pub type ActivityImpl = Box<dyn Fn(&str, u32) -> Result<Payload, FailureDetails>>;

/// Drives one instance: keeps its history, runs activities synchronously, fires timers when
/// asked, and checks after every turn that replaying the recorded history from scratch gives
/// the same session state.
pub struct Driver {
    pub registry: Arc<Registry>,
    pub id: InstanceId,
    pub history: Vec<HistoryEvent>,
    pub session: OrchestrationSession,
    pub now: u64,
    pub inbox: VecDeque<Message>,
    pub timers: Vec<(u64, Timestamp)>,
    pub activities: HashMap<String, ActivityImpl>,
    pub all_actions: Vec<Action>,
    pub last: TurnResult,
    pub seq: u64,
    pub replay_check: bool,
}

pub fn ts(ms: u64) -> Timestamp {
    Timestamp::from_millis(ms)
}

/// An `ExecutionStarted` of `name` with `input` as execution `execution_id`: no version, no
/// parent, no scheduled start, no tags.
pub fn started(name: &str, input: Payload, execution_id: ExecutionId) -> EventKind {
    started_by(None, name, input, execution_id)
}

/// As [`started`], of a sub-orchestration of `parent` if there is one.
pub fn started_by(
    parent: Option<ParentInstance>,
    name: &str,
    input: Payload,
    execution_id: ExecutionId,
) -> EventKind {
    EventKind::ExecutionStarted {
        name: name.into(),
        version: None,
        input,
        execution_id,
        parent,
        scheduled_start: None,
        applied_event_ids: Vec::new(),
        tags: Default::default(),
    }
}

/// Message `m{n}` of instance `id` from a client, sent at `n` ms.
pub fn numbered(id: InstanceId, n: u64, event: EventKind) -> Message {
    let mut m = Message::from_client(id, event, ts(n));
    m.id = MessageId::from_stored(format!("m{n}"));
    m
}

/// The first turn of instance `v` running `name` at `version` (null input): what the code
/// returned, or its failure.
pub fn first_turn_of(
    reg: &Arc<Registry>,
    name: &str,
    version: Option<&str>,
) -> Result<String, FailureDetails> {
    let id = InstanceId::new("v").unwrap();
    let mut s = OrchestrationSession::new(reg.clone(), id.clone());
    let m = Message::from_client(
        id,
        EventKind::ExecutionStarted {
            name: name.into(),
            version: version.map(str::to_owned),
            input: Payload::null(),
            execution_id: ExecutionId::random(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        ts(0),
    );
    let r = s.turn(TurnInput {
        now: ts(0),
        messages: vec![m],
    });
    match r.actions.first() {
        Some(Action::Complete { result }) => Ok(result.parse::<String>("o").unwrap()),
        Some(Action::Fail { failure }) => Err(failure.clone()),
        other => panic!("{other:?}"),
    }
}

/// The decision a remote turn waits for; fails the test if the turn ended instead.
pub fn pending(step: TurnStep) -> PendingTurn {
    match step {
        TurnStep::Decide(p) => p,
        TurnStep::Done(r) => panic!("expected a decision to be asked, got {r:?}"),
    }
}

/// Starts a turn of `s` at `n` ms on `messages`.
pub fn turn(s: &mut OrchestrationSession, n: u64, messages: Vec<Message>) -> TurnStep {
    s.start_turn(TurnInput {
        now: ts(n),
        messages,
    })
}

/// Entity `id` on `registry`, its state and record kept from batch to batch as the runtime
/// keeps them.
pub struct EntityCell<'a> {
    pub registry: &'a Registry,
    pub id: EntityId,
    pub state: Option<Payload>,
    pub record: taskhub_core::entity::EntityRecord,
}

impl<'a> EntityCell<'a> {
    pub fn new(registry: &'a Registry, id: EntityId) -> Self {
        Self {
            registry,
            id,
            state: None,
            record: taskhub_core::entity::EntityRecord::default(),
        }
    }

    /// Runs one batch of `messages` at `now`.
    pub fn run(
        &mut self,
        now: Timestamp,
        messages: Vec<taskhub_core::entity::BatchMessage>,
    ) -> taskhub_core::entity::BatchOutcome {
        taskhub_core::entity::run_batch(
            self.registry,
            &self.id,
            now,
            &mut self.state,
            &mut self.record,
            messages,
        )
    }
}

pub fn payload<T: serde::Serialize>(v: T) -> Payload {
    Payload::to_payload(&v, "test").unwrap()
}

impl Driver {
    pub fn new(registry: Registry, id: &str) -> Self {
        let registry = Arc::new(registry);
        let id = InstanceId::new(id).unwrap();
        Self {
            session: OrchestrationSession::new(registry.clone(), id.clone()),
            registry,
            id,
            history: Vec::new(),
            now: 1_000_000,
            inbox: VecDeque::new(),
            timers: Vec::new(),
            activities: HashMap::new(),
            all_actions: Vec::new(),
            last: TurnResult::default(),
            seq: 0,
            replay_check: true,
        }
    }

    pub fn activity(
        mut self,
        name: &str,
        f: impl Fn(&str, u32) -> Result<Payload, FailureDetails> + 'static,
    ) -> Self {
        self.activities.insert(name.to_owned(), Box::new(f));
        self
    }

    pub fn msg(&mut self, event: EventKind) -> Message {
        self.seq += 1;
        let mut m = Message::from_client(self.id.clone(), event, ts(self.now));
        m.id = MessageId::from_stored(format!("m{}", self.seq));
        m
    }

    pub fn start<T: serde::Serialize>(&mut self, name: &str, input: T) -> TurnResult {
        let m = self.msg(started(
            name,
            payload(input),
            ExecutionId::new("exec-1").unwrap(),
        ));
        self.turn(vec![m])
    }

    /// A client's external event `name` with `data`, not yet delivered.
    pub fn event<T: serde::Serialize>(&mut self, name: &str, data: T) -> Message {
        self.msg(EventKind::EventRaised {
            name: name.into(),
            input: payload(data),
        })
    }

    pub fn raise<T: serde::Serialize>(&mut self, name: &str, data: T) -> TurnResult {
        let m = self.event(name, data);
        self.turn(vec![m])
    }

    /// Runs one turn with `messages`, appends its events, and queues the results of its actions.
    pub fn turn(&mut self, messages: Vec<Message>) -> TurnResult {
        self.now += 10;
        let r = self.session.turn(TurnInput {
            now: ts(self.now),
            messages,
        });
        self.history.extend(r.new_events.iter().cloned());
        assert_eq!(self.session.history_len(), self.history.len() as u64);
        for a in &r.actions {
            match a {
                Action::ScheduleActivity {
                    task_id,
                    name,
                    input,
                    attempt,
                    ..
                } => {
                    let out = match self.activities.get(name) {
                        Some(f) => f(input.as_str(), *attempt),
                        None => Err(FailureDetails::new("ActivityNotFound", name.clone())),
                    };
                    let ev = match out {
                        Ok(result) => EventKind::TaskCompleted {
                            task_id: *task_id,
                            result,
                        },
                        Err(failure) => EventKind::TaskFailed {
                            task_id: *task_id,
                            failure,
                        },
                    };
                    let m = self.msg(ev);
                    self.inbox.push_back(m);
                }
                Action::CreateTimer { task_id, fire_at } => self.timers.push((*task_id, *fire_at)),
                _ => {}
            }
        }
        self.all_actions.extend(r.actions.iter().cloned());
        if self.replay_check {
            self.check_replay();
        }
        self.last = r.clone();
        r
    }

    /// Replaying the whole history from scratch must reach the same state without faults.
    pub fn check_replay(&self) {
        let replayed =
            OrchestrationSession::load(self.registry.clone(), self.id.clone(), &self.history);
        assert_eq!(
            replayed.status(),
            self.session.status(),
            "replayed status differs"
        );
        assert_eq!(replayed.history_len(), self.session.history_len());
        // A finished execution is loaded without re-running its code; what the runtime writes
        // into the instance row must still come from its start.
        assert_eq!(
            replayed.execution_id(),
            self.session.execution_id(),
            "replayed execution differs"
        );
        assert_eq!(
            replayed.name(),
            self.session.name(),
            "replayed name differs"
        );
        assert_eq!(replayed.version(), self.session.version());
    }

    /// Delivers queued activity results one message per turn until none are left.
    pub fn run_one_by_one(&mut self) {
        while let Some(m) = self.inbox.pop_front() {
            self.turn(vec![m]);
        }
    }

    /// Delivers all queued activity results in one batch per turn until none are left.
    pub fn run_batched(&mut self) {
        while !self.inbox.is_empty() {
            let batch: Vec<Message> = self.inbox.drain(..).collect();
            self.turn(batch);
        }
    }

    /// Fires the earliest pending timer.
    pub fn fire_next_timer(&mut self) -> TurnResult {
        self.timers.sort_by_key(|(_, at)| *at);
        let (task_id, fire_at) = self.timers.remove(0);
        if fire_at.as_millis() > self.now {
            self.now = fire_at.as_millis();
        }
        let m = self.msg(EventKind::TimerFired { task_id, fire_at });
        self.turn(vec![m])
    }

    /// The event that ended the execution, if it ended.
    pub fn end(&self) -> Option<&EventKind> {
        self.history
            .iter()
            .rev()
            .find(|e| e.event.is_terminal())
            .map(|e| &e.event)
    }

    /// The latest history event `matches` accepts.
    pub fn last_event(&self, matches: impl Fn(&EventKind) -> bool) -> &HistoryEvent {
        self.history
            .iter()
            .rev()
            .find(|e| matches(&e.event))
            .unwrap()
    }

    pub fn output<T: serde::de::DeserializeOwned>(&self) -> T {
        match self.end() {
            Some(EventKind::ExecutionCompleted { result }) => result.parse("output").unwrap(),
            other => panic!("not completed: {other:?}"),
        }
    }

    /// Rewinds the failed instance as the runtime does: loads it rewound, replaces the history
    /// with the kept events, and runs the turn that applies the rewind request.
    pub fn rewind(&mut self, reason: Option<&str>) -> (RewindPlan, TurnResult) {
        let (session, plan) = OrchestrationSession::load_rewound(
            self.registry.clone(),
            self.id.clone(),
            &self.history,
            false,
        )
        .unwrap();
        self.session = session;
        self.history = plan.kept.clone();
        let m = self.msg(EventKind::ExecutionRewound {
            reason: reason.map(str::to_owned),
            rewound_tasks: Vec::new(),
        });
        let r = self.turn(vec![m]);
        (plan, r)
    }

    pub fn failure(&self) -> FailureDetails {
        match self.end() {
            Some(EventKind::ExecutionFailed { failure }) => failure.clone(),
            other => panic!("not failed: {other:?}"),
        }
    }
}
