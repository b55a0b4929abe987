//! An in-process SDK: a scripted [`RemoteExecutor`] that plays an SDK worker of another
//! language. For each turn it replays `past` + `new` through a script (a plain function of
//! what the history holds), collects the script's actions with task IDs counted from 0, and
//! answers with those the history does not hold yet (as an SDK does), then how the script
//! ended. While the history says the instance is suspended it answers nothing (the SDKs hold
//! events while suspended). Activities are closures by name.
//!
//! Included by the test files that use it as `#[path = "common/sdk.rs"] mod sdk;`.
#![allow(
    dead_code,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support"
)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use taskhub::executor::{
    ActivityOutcome, ActivityWork, Decision, ExecutorError, ExecutorFuture, OrchestrationDecision,
    OrchestrationWork, RemoteExecutor,
};
use taskhub::*;

/// How a script's replay ended.
pub enum End {
    /// Waiting for something.
    Pending,
    /// Completed with this output.
    Complete(serde_json::Value),
    /// Failed.
    Fail(FailureDetails),
    /// Continue as new with this input, carrying the events it did not consume.
    ContinueAsNew(serde_json::Value),
    /// Ended itself as terminated.
    Terminate(String),
    /// Answer exactly these decisions (after none of the collected actions).
    Raw(Vec<Decision>),
}

/// A script: what the orchestration does, replayed from the history each turn.
pub type Script = Arc<dyn Fn(&mut Replay) -> End + Send + Sync>;
/// A remote activity.
pub type Activity = Arc<dyn Fn(&ActivityWork) -> ActivityOutcome + Send + Sync>;
/// What the executor answers instead of running the script (e.g. an error), asked per call
/// with the call's number (from 0).
pub type Interpose = Arc<
    dyn Fn(&OrchestrationWork, usize) -> Option<Result<OrchestrationDecision, ExecutorError>>
        + Send
        + Sync,
>;

/// The history of one execution as a script sees it.
pub struct Replay {
    /// The instance.
    pub instance: InstanceId,
    /// The execution's input.
    pub input: Payload,
    /// The time of the execution's first turn.
    pub started_at: Timestamp,
    /// The execution (from its `ExecutionStarted`).
    pub execution: Option<ExecutionId>,
    results: HashMap<u64, Result<Payload, FailureDetails>>,
    fired: HashSet<u64>,
    events: Vec<(String, Payload, bool)>,
    recorded: HashSet<u64>,
    next_id: u64,
    actions: Vec<Decision>,
    custom_status: Option<Payload>,
}

fn payload(v: impl Serialize) -> Payload {
    Payload::to_payload(&v, "test value").unwrap()
}

impl Replay {
    fn new(work: &OrchestrationWork) -> (Self, bool) {
        let mut r = Self {
            instance: work.instance.clone(),
            input: Payload::null(),
            started_at: Timestamp::EPOCH,
            execution: None,
            results: HashMap::new(),
            fired: HashSet::new(),
            events: Vec::new(),
            recorded: HashSet::new(),
            next_id: 0,
            actions: Vec::new(),
            custom_status: None,
        };
        let mut suspended = false;
        for e in work.past.iter().chain(&work.new) {
            match &e.event {
                EventKind::OrchestratorStarted if r.started_at == Timestamp::EPOCH => {
                    r.started_at = e.timestamp;
                }
                EventKind::ExecutionStarted {
                    input,
                    execution_id,
                    ..
                } => {
                    r.input = input.clone();
                    r.execution = Some(execution_id.clone());
                }
                EventKind::TaskScheduled { task_id, .. }
                | EventKind::TimerCreated { task_id, .. }
                | EventKind::SubOrchestrationCreated { task_id, .. }
                | EventKind::EventSent { task_id, .. } => {
                    r.recorded.insert(*task_id);
                }
                EventKind::TaskCompleted { task_id, result }
                | EventKind::SubOrchestrationCompleted { task_id, result } => {
                    r.results.insert(*task_id, Ok(result.clone()));
                }
                EventKind::TaskFailed { task_id, failure }
                | EventKind::SubOrchestrationFailed { task_id, failure } => {
                    r.results.insert(*task_id, Err(failure.clone()));
                }
                EventKind::TimerFired { task_id, .. } => {
                    r.fired.insert(*task_id);
                }
                EventKind::EventRaised { name, input } => {
                    r.events.push((name.clone(), input.clone(), false));
                }
                EventKind::ExecutionSuspended { .. } => suspended = true,
                EventKind::ExecutionResumed { .. } => suspended = false,
                _ => {}
            }
        }
        (r, suspended)
    }

    fn next(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn act(&mut self, id: u64, d: Decision) {
        if !self.recorded.contains(&id) {
            self.actions.push(d);
        }
    }

    /// The execution's input as `T`.
    pub fn input<T: serde::de::DeserializeOwned>(&self) -> T {
        self.input.parse("input").unwrap()
    }

    /// Calls an activity: its outcome once recorded.
    pub fn activity(
        &mut self,
        name: &str,
        input: impl Serialize,
    ) -> Option<Result<Payload, FailureDetails>> {
        let task_id = self.next();
        self.act(
            task_id,
            Decision::ScheduleActivity {
                task_id,
                name: name.into(),
                version: None,
                input: payload(input),
                tags: Default::default(),
                traceparent: None,
            },
        );
        self.results.get(&task_id).cloned()
    }

    /// Starts a sub-orchestration: its outcome once recorded.
    pub fn sub(
        &mut self,
        name: &str,
        instance: &str,
        input: impl Serialize,
    ) -> Option<Result<Payload, FailureDetails>> {
        let task_id = self.next();
        self.act(
            task_id,
            Decision::StartSubOrchestration {
                task_id,
                name: name.into(),
                version: None,
                instance_id: InstanceId::new(instance).unwrap(),
                input: payload(input),
                tags: Default::default(),
                traceparent: None,
            },
        );
        self.results.get(&task_id).cloned()
    }

    /// Creates a timer: true once it fired.
    pub fn timer(&mut self, fire_at: Timestamp) -> bool {
        let task_id = self.next();
        self.act(task_id, Decision::CreateTimer { task_id, fire_at });
        self.fired.contains(&task_id)
    }

    /// Raises an event on another instance.
    pub fn send(&mut self, instance: &str, name: &str, input: impl Serialize) {
        let task_id = self.next();
        self.act(
            task_id,
            Decision::SendEvent {
                task_id,
                instance_id: InstanceId::new(instance).unwrap(),
                name: name.into(),
                input: payload(input),
            },
        );
    }

    /// The next unconsumed event named `name`, in arrival order.
    pub fn event(&mut self, name: &str) -> Option<Payload> {
        let e = self
            .events
            .iter_mut()
            .find(|(n, _, used)| n == name && !used)?;
        e.2 = true;
        Some(e.1.clone())
    }

    /// How many events named `name` arrived.
    pub fn count(&self, name: &str) -> usize {
        self.events.iter().filter(|(n, _, _)| n == name).count()
    }

    /// Sets the custom status.
    pub fn set_status(&mut self, v: impl Serialize) {
        self.custom_status = Some(payload(v));
    }
}

/// The scripted SDK.
#[derive(Default)]
pub struct Sdk {
    scripts: HashMap<String, Script>,
    activities: HashMap<String, Activity>,
    delays: HashMap<String, std::time::Duration>,
    interpose: Option<Interpose>,
    /// Every turn it was asked, in order.
    pub asked: Mutex<Vec<OrchestrationWork>>,
    /// Activities it ran.
    pub ran: Mutex<Vec<ActivityWork>>,
    calls: AtomicUsize,
}

impl Sdk {
    /// An SDK that knows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an orchestration.
    pub fn orchestration(
        mut self,
        name: &str,
        f: impl Fn(&mut Replay) -> End + Send + Sync + 'static,
    ) -> Self {
        self.scripts.insert(name.into(), Arc::new(f));
        self
    }

    /// Adds an activity.
    pub fn activity(
        mut self,
        name: &str,
        f: impl Fn(&ActivityWork) -> ActivityOutcome + Send + Sync + 'static,
    ) -> Self {
        self.activities.insert(name.into(), Arc::new(f));
        self
    }

    /// Makes activity `name` take `delay` (real time) before it answers.
    pub fn slow(mut self, name: &str, delay: std::time::Duration) -> Self {
        self.delays.insert(name.into(), delay);
        self
    }

    /// Answers some calls itself (see [`Interpose`]).
    pub fn interpose(
        mut self,
        f: impl Fn(&OrchestrationWork, usize) -> Option<Result<OrchestrationDecision, ExecutorError>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.interpose = Some(Arc::new(f));
        self
    }

    /// The turns asked for `instance`.
    pub fn asked_for(&self, instance: &InstanceId) -> Vec<OrchestrationWork> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|w| &w.instance == instance)
            .cloned()
            .collect()
    }

    /// Decides one turn as the SDK would.
    pub fn decide(&self, work: &OrchestrationWork) -> OrchestrationDecision {
        let script = self
            .scripts
            .get(&work.name)
            .unwrap_or_else(|| panic!("no script for '{}'", work.name))
            .clone();
        let (mut r, suspended) = Replay::new(work);
        if suspended {
            return OrchestrationDecision::default();
        }
        let end = script(&mut r);
        let mut decisions = std::mem::take(&mut r.actions);
        match end {
            End::Pending => {}
            End::Complete(v) => decisions.push(Decision::Complete { result: payload(v) }),
            End::Fail(failure) => decisions.push(Decision::Fail { failure }),
            End::Terminate(reason) => decisions.push(Decision::Terminate {
                reason: payload(reason),
            }),
            End::ContinueAsNew(input) => {
                let carried_events = r
                    .events
                    .iter()
                    .filter(|(_, _, used)| !used)
                    .map(|(name, input, _)| CarriedEvent {
                        name: name.clone(),
                        input: input.clone(),
                    })
                    .collect();
                decisions.push(Decision::ContinueAsNew {
                    input: payload(input),
                    version: None,
                    carried_events,
                });
            }
            End::Raw(raw) => decisions = raw,
        }
        let mut d = OrchestrationDecision::new(decisions);
        d.custom_status = r.custom_status;
        d
    }
}

impl RemoteExecutor for Sdk {
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().unwrap().push(work.clone());
        let answer = match self.interpose.as_ref().and_then(|f| f(&work, n)) {
            Some(answer) => answer,
            None => Ok(self.decide(&work)),
        };
        Box::pin(async move { answer })
    }

    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome> {
        self.ran.lock().unwrap().push(work.clone());
        let outcome = match self.activities.get(&work.name) {
            Some(f) => f(&work),
            None => Err(FailureDetails::new(
                "ActivityNotFound",
                format!("the SDK has no activity '{}'", work.name),
            )),
        };
        let delay = self.delays.get(&work.name).copied();
        Box::pin(async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            Ok(outcome)
        })
    }
}
