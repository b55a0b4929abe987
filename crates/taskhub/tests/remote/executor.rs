//! The executor seam: orchestrations and activities that are not in the worker's registry run
//! in a `RemoteExecutor` (here an in-process scripted SDK, `common/sdk.rs`), with everything
//! below it the runtime's: activity sequences, fan-out/fan-in, timers, events before and after
//! the wait, sub-orchestrations (remote and Rust), continue-as-new carrying events,
//! suspend/resume, terminate, custom status, failures with details; impossible decisions fail
//! the orchestration with the rule they broke; executor errors give the batch back (counted or
//! not, by kind); a lease lost, or the worker stopping, while a decision is out drops the
//! executor's future and commits nothing. On the memory backend and SQLite; the first four also
//! on Azure Storage (Azurite: `scripts/with-azurite.sh`, as `scripts/test.sh` runs them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backends::{settings, Backend, TestStore};
use crate::common;
use crate::common::remote::{
    flaky_or_hanging, never_answers, short_lease, steal_the_lease, RemoteEnv,
};
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::STUCK;
use crate::common::{advance_until_completed, find, start_as, status_of, until_paused, wait_done};
use crate::sdk::{End, Replay, Sdk};
use taskhub::executor::{
    ActivityOutcome, ActivityWork, Decision, ExecutorError, ExecutorFuture, OrchestrationDecision,
    OrchestrationWork, RemoteExecutor,
};
use taskhub::*;
use taskhub_test_support::wait;

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    an_sdk_runs_every_kind_of_step,
    suspend_resume_and_terminate,
    impossible_decisions_fail_the_orchestration_with_their_rule,
    executor_errors_are_retried_and_counted_by_kind,
    a_lease_lost_while_a_decision_is_out_commits_nothing,
    a_stopping_worker_withdraws_its_decision,
    a_decision_out_holds_up_no_other_instance,
    a_remote_activity_keeps_its_work_item_hidden,
    activity_executor_errors_give_the_work_item_back,
);

/// The same bodies on Azure Storage (the ones whose timing does not depend on sub-second
/// queue delays).
mod on_azure {
    use super::*;
    taskhub_test_support::backend_matrix!(
        [azure]
        an_sdk_runs_every_kind_of_step,
        suspend_resume_and_terminate,
        impossible_decisions_fail_the_orchestration_with_their_rule,
        a_lease_lost_while_a_decision_is_out_commits_nothing,
    );
}

/// How long (tokio time) a paused-time test waits for the worker to take a step.
const TEN_S: Duration = Duration::from_secs(10);

fn p(v: impl serde::Serialize) -> Payload {
    Payload::to_payload(&v, "test").unwrap()
}

fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

/// What the Rust side of the worker runs: one activity and one orchestration.
fn rust_registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Upper", |_ctx: ActivityContext, s: String| async move {
        Ok::<_, ActivityError>(s.to_uppercase())
    });
    reg.orchestration(
        "RustChild",
        |_ctx: OrchestrationContext, x: u64| async move { Ok::<_, OrchestrationError>(x + 100) },
    );
    // A Rust parent of a remote child, calling a remote activity too.
    reg.orchestration(
        "RustParent",
        |ctx: OrchestrationContext, x: u64| async move {
            let child: u64 = ctx.call_sub_orchestration("Child", x).await?;
            let hello: String = ctx.call_activity("Hello", "Rust").await?;
            Ok::<_, OrchestrationError>(format!("{child} {hello}"))
        },
    );
    reg
}

/// Waits for a step's outcome: `Pending` while it has none; a failure ends the script.
macro_rules! step {
    ($e:expr) => {
        match $e {
            None => return End::Pending,
            Some(Err(f)) => return End::Fail(f),
            Some(Ok(v)) => v,
        }
    };
}

fn sequence(r: &mut Replay) -> End {
    let mut out = Vec::new();
    for city in ["Tokyo", "Seattle", "London"] {
        out.push(
            step!(r.activity("Hello", city))
                .parse::<String>("")
                .unwrap(),
        );
    }
    // A name in the registry runs in Rust.
    let upper = step!(r.activity("Upper", out.join(", ")));
    End::Complete(serde_json::from_str(upper.as_str()).unwrap())
}

fn fan_out(r: &mut Replay) -> End {
    let n: u64 = r.input();
    let results: Vec<_> = (0..n).map(|i| r.activity("Square", i)).collect();
    let mut sum = 0;
    for res in results {
        sum += step!(res).parse::<u64>("").unwrap();
    }
    End::Complete(sum.into())
}

fn timer(r: &mut Replay) -> End {
    let at = r.started_at.saturating_add(Duration::from_millis(300));
    if r.timer(at) {
        End::Complete(true.into())
    } else {
        End::Pending
    }
}

fn events(r: &mut Replay) -> End {
    step!(r.activity("Hello", "events"));
    r.set_status("waiting a");
    let Some(a) = r.event("a") else {
        return End::Pending;
    };
    r.set_status("waiting b");
    let Some(b) = r.event("b") else {
        return End::Pending;
    };
    let both: Vec<String> = vec![a.parse("a").unwrap(), b.parse("b").unwrap()];
    End::Complete(serde_json::json!(both))
}

fn parent(r: &mut Replay) -> End {
    let child = format!("{}-child", r.instance);
    let remote = r.sub("Child", &child, 21u64);
    let rust = r.sub("RustChild", &format!("{child}-rust"), 1u64);
    let a = step!(remote).parse::<u64>("").unwrap();
    let b = step!(rust).parse::<u64>("").unwrap();
    End::Complete((a + b).into())
}

fn child(r: &mut Replay) -> End {
    End::Complete((r.input::<u64>() * 2).into())
}

/// Execution 0 counts the `x` events it sees and continues as new on `go`, carrying them;
/// execution 1 adds two `x`s.
fn carry(r: &mut Replay) -> End {
    if r.input::<u64>() == 0 {
        r.set_status(r.count("x"));
        return match r.event("go") {
            Some(_) => End::ContinueAsNew(1u64.into()),
            None => End::Pending,
        };
    }
    let (Some(a), Some(b)) = (r.event("x"), r.event("x")) else {
        return End::Pending;
    };
    End::Complete((a.parse::<u64>("").unwrap() + b.parse::<u64>("").unwrap()).into())
}

fn fails(r: &mut Replay) -> End {
    step!(r.activity("Boom", ()));
    End::Complete(serde_json::Value::Null)
}

fn gate(r: &mut Replay) -> End {
    r.set_status("open");
    match r.event("go") {
        Some(v) => End::Complete(serde_json::from_str(v.as_str()).unwrap()),
        None => End::Pending,
    }
}

fn the_sdk() -> Sdk {
    Sdk::new()
        .orchestration("Sequence", sequence)
        .orchestration("FanOut", fan_out)
        .orchestration("Timer", timer)
        .orchestration("Events", events)
        .orchestration("Parent", parent)
        .orchestration("Child", child)
        .orchestration("Carry", carry)
        .orchestration("Fails", fails)
        .orchestration("Gate", gate)
        .orchestration("Quit", |_r: &mut Replay| End::Terminate("enough".into()))
        .activity("Hello", |w: &ActivityWork| {
            Ok(p(format!(
                "Hello {}!",
                w.input.parse::<String>("").unwrap()
            )))
        })
        .activity("Square", |w: &ActivityWork| {
            let x: u64 = w.input.parse("").unwrap();
            Ok(p(x * x))
        })
        .activity("Boom", |_w: &ActivityWork| {
            let mut f = FailureDetails::new("BoomError", "it broke");
            f.details = Some("at line 7".into());
            Err(f)
        })
}

type Env = RemoteEnv<TestStore>;

async fn env(backend: Backend, executor: Arc<dyn RemoteExecutor>, settings: Settings) -> Env {
    let store = TestStore::fresh(backend, "remote-executor").await;
    let hub = TaskHub::open(store.store.clone(), settings).await.unwrap();
    RemoteEnv::with_worker(hub, store, rust_registry(), executor).await
}

impl Env {
    async fn start(&self, name: &str, instance: &str, input: impl serde::Serialize) -> InstanceId {
        start_as(&self.client, name, &id(instance), input).await
    }

    async fn done(&self, instance: &InstanceId) -> InstanceStatus {
        wait_done(&self.client, instance, STUCK).await
    }

    async fn history(&self, instance: &InstanceId) -> Vec<HistoryEvent> {
        self.client
            .get_status(instance, StatusOptions { history: true })
            .await
            .unwrap()
            .and_then(|s| s.history)
            .unwrap_or_default()
    }

    async fn custom_status(&self, instance: &InstanceId) -> Option<String> {
        let row = self
            .client
            .get_status(instance, StatusOptions::default())
            .await
            .unwrap()?
            .row;
        row.custom_status.map(|p| p.as_str().to_owned())
    }

    /// Waits until the custom status is the JSON `want`.
    async fn until_status(&self, instance: &InstanceId, want: &str) {
        wait::until_some(&format!("custom status {want}"), || async move {
            (self.custom_status(instance).await.as_deref() == Some(want)).then_some(())
        })
        .await;
    }
}

async fn an_sdk_runs_every_kind_of_step(backend: Backend) {
    let sdk = Arc::new(the_sdk());
    let env = env(backend, sdk.clone(), settings(backend)).await;

    let seq = env.start("Sequence", "seq", ()).await;
    let fan = env.start("FanOut", "fan", 20u64).await;
    let tim = env.start("Timer", "timer", ()).await;
    let evs = env.start("Events", "events", ()).await;
    // Raised at once: it arrives before the orchestration waits for it.
    env.client.raise_event(&evs, "a", "A").await.unwrap();
    let par = env.start("Parent", "parent", ()).await;
    let car = env.start("Carry", "carry", 0u64).await;
    env.client.raise_event(&car, "x", &1u64).await.unwrap();
    env.client.raise_event(&car, "x", &2u64).await.unwrap();
    let fai = env.start("Fails", "fails", ()).await;
    let rpa = env.start("RustParent", "rust-parent", 4u64).await;

    // Activity sequence: remote activities, then a Rust one.
    let done = env.done(&seq).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(
        done.output::<String>().unwrap().unwrap(),
        "HELLO TOKYO!, HELLO SEATTLE!, HELLO LONDON!"
    );
    let ran: Vec<String> = sdk
        .ran
        .lock()
        .unwrap()
        .iter()
        .map(|w| w.name.clone())
        .collect();
    assert!(
        !ran.contains(&"Upper".to_owned()),
        "a registered activity runs in Rust"
    );
    // Each turn's `past` is the execution's committed history so far.
    let history = env.history(&seq).await;
    for w in sdk.asked_for(&seq) {
        assert_eq!(
            history[..w.past.len()],
            w.past[..],
            "past is the stored history"
        );
        let new = &history[w.past.len()..w.past.len() + w.new.len()];
        assert_eq!(new, &w.new[..], "new is what the turn recorded");
    }

    // Fan-out/fan-in.
    let done = env.done(&fan).await;
    assert_eq!(
        done.output::<u64>().unwrap(),
        Some((0..20u64).map(|i| i * i).sum())
    );

    // A durable timer fires at its time.
    let done = env.done(&tim).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    let history = env.history(&tim).await;
    let fire_at = history
        .iter()
        .find_map(|e| match e.event {
            EventKind::TimerCreated { fire_at, .. } => Some(fire_at),
            _ => None,
        })
        .unwrap();
    let fired = history
        .iter()
        .find(|e| matches!(e.event, EventKind::TimerFired { .. }))
        .unwrap();
    assert!(
        fired.timestamp >= fire_at,
        "the timer fired at or after its time"
    );

    // An event after the wait; the custom status shows where it waits.
    env.until_status(&evs, r#""waiting b""#).await;
    env.client.raise_event(&evs, "b", "B").await.unwrap();
    let done = env.done(&evs).await;
    assert_eq!(done.output::<Vec<String>>().unwrap().unwrap(), ["A", "B"]);
    assert_eq!(done.row.custom_status.unwrap().as_str(), "\"waiting b\"");

    // Sub-orchestrations: a remote child and a Rust child.
    let done = env.done(&par).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(42 + 101));

    // A Rust orchestration calls a remote sub-orchestration and a remote activity.
    let done = env.done(&rpa).await;
    assert_eq!(
        done.output::<String>().unwrap().as_deref(),
        Some("8 Hello Rust!")
    );

    // Continue-as-new carries the events the first execution did not consume.
    env.until_status(&car, "2").await;
    env.client.raise_event(&car, "go", &()).await.unwrap();
    let done = env.done(&car).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(3));

    // A remote activity's failure reaches the orchestration with its details.
    let done = env.done(&fai).await;
    assert_eq!(done.status(), OrchestrationStatus::Failed);
    let failure = done.row.failure.unwrap();
    assert_eq!(failure.error_type, "BoomError");
    assert_eq!(failure.message, "it broke");
    assert_eq!(failure.details.as_deref(), Some("at line 7"));
    env.shutdown().await;
}

async fn suspend_resume_and_terminate(backend: Backend) {
    let sdk = Arc::new(the_sdk());
    let env = env(backend, sdk.clone(), settings(backend)).await;

    let g = env.start("Gate", "gate", ()).await;
    env.until_status(&g, r#""open""#).await;
    env.client.suspend(&g, Some("hold")).await.unwrap();
    wait::until_some("suspended", || async {
        let s = env
            .client
            .get_status(&g, StatusOptions::default())
            .await
            .unwrap();
        (s.unwrap().status() == OrchestrationStatus::Suspended).then_some(())
    })
    .await;
    env.client.raise_event(&g, "go", "went").await.unwrap();
    // The event is recorded while suspended, and nothing completes.
    wait::until_some("the event recorded", || async {
        let h = env.history(&g).await;
        h.iter()
            .any(|e| matches!(e.event, EventKind::EventRaised { .. }))
            .then_some(())
    })
    .await;
    let row = find(&env.client, &g).await.unwrap();
    assert_eq!(row.status(), OrchestrationStatus::Suspended);
    env.client.resume(&g, None).await.unwrap();
    let done = env.done(&g).await;
    assert_eq!(done.output::<String>().unwrap().as_deref(), Some("went"));

    // A client's terminate is applied without asking the executor.
    let t = env.start("Gate", "terminated", ()).await;
    env.until_status(&t, r#""open""#).await;
    let asked = sdk.asked_for(&t).len();
    env.client.terminate(&t, "stop").await.unwrap();
    let done = env.done(&t).await;
    assert_eq!(done.status(), OrchestrationStatus::Terminated);
    assert_eq!(
        sdk.asked_for(&t).len(),
        asked,
        "the terminate turn was not sent"
    );

    // The code may end itself as terminated.
    let q = env.start("Quit", "quit", ()).await;
    let done = env.done(&q).await;
    assert_eq!(done.status(), OrchestrationStatus::Terminated);
    let history = env.history(&q).await;
    assert!(history.iter().any(|e| matches!(&e.event,
        EventKind::ExecutionTerminated { reason, .. } if reason == "enough")));
    env.shutdown().await;
}

fn schedule(task_id: u64, name: &str) -> Decision {
    Decision::ScheduleActivity {
        task_id,
        name: name.into(),
        version: None,
        input: Payload::null(),
        tags: Default::default(),
        traceparent: None,
    }
}

async fn impossible_decisions_fail_the_orchestration_with_their_rule(backend: Backend) {
    let sdk = the_sdk()
        .orchestration("Dup", |_r: &mut Replay| {
            End::Raw(vec![schedule(0, "Hello"), schedule(0, "Hello")])
        })
        .orchestration("DupLater", |r: &mut Replay| {
            // Task 0 once; once it completed, task 0 again.
            if r.activity("Hello", "x").is_none() {
                return End::Pending;
            }
            End::Raw(vec![schedule(0, "Hello")])
        })
        .orchestration("NoName", |_r: &mut Replay| End::Raw(vec![schedule(0, " ")]))
        .orchestration("NoTime", |_r: &mut Replay| {
            End::Raw(vec![Decision::CreateTimer {
                task_id: 0,
                fire_at: Timestamp::EPOCH,
            }])
        })
        .orchestration("AfterEnd", |_r: &mut Replay| {
            End::Raw(vec![
                Decision::Complete {
                    result: Payload::null(),
                },
                schedule(0, "Hello"),
            ])
        })
        .orchestration("SelfSub", |r: &mut Replay| {
            End::Raw(vec![Decision::StartSubOrchestration {
                task_id: 0,
                name: "Child".into(),
                version: None,
                instance_id: r.instance.clone(),
                input: Payload::null(),
                tags: Default::default(),
                traceparent: None,
            }])
        });
    let env = env(backend, Arc::new(sdk), settings(backend)).await;
    let cases = [
        ("Dup", "DuplicateTaskId"),
        ("DupLater", "DuplicateTaskId"),
        ("NoName", "EmptyName"),
        ("NoTime", "TimerWithoutTime"),
        ("AfterEnd", "DecisionAfterEnd"),
        ("SelfSub", "SubOrchestrationIsSelf"),
    ];
    let mut ids = Vec::new();
    for (name, _) in cases {
        ids.push(env.start(name, &format!("bad-{name}"), ()).await);
    }
    for ((name, rule), i) in cases.iter().zip(&ids) {
        let done = env.done(i).await;
        assert_eq!(done.status(), OrchestrationStatus::Failed, "{name}");
        let failure = done.row.failure.unwrap();
        assert_eq!(failure.error_type, *rule, "{name}: {}", failure.message);
        assert!(
            failure.message.contains("invalid decision"),
            "{}",
            failure.message
        );
        // None of the refused turn's decisions was recorded.
        let scheduled = env
            .history(i)
            .await
            .iter()
            .filter(|e| matches!(e.event, EventKind::TaskScheduled { .. }))
            .count();
        assert_eq!(scheduled, usize::from(*name == "DupLater"), "{name}");
    }
    // The worker is fine: other orchestrations still run.
    let seq = env.start("Sequence", "after-bad", ()).await;
    assert_eq!(
        env.done(&seq).await.status(),
        OrchestrationStatus::Completed
    );
    env.shutdown().await;
}

async fn executor_errors_are_retried_and_counted_by_kind(backend: Backend) {
    let flaky = Arc::new(AtomicUsize::new(0));
    let f = flaky.clone();
    let sdk = the_sdk()
        .orchestration("Hangs", |_r: &mut Replay| End::Pending)
        // Four uncounted refusals are more than max_dequeue_count deliveries.
        .interpose(move |w: &OrchestrationWork, _| {
            flaky_or_hanging(&w.name, "Sequence", "Hangs", &f)
        });
    let settings = Settings {
        max_dequeue_count: 2,
        ..settings(backend)
    };
    let env = env(backend, Arc::new(sdk), settings).await;
    let seq = env.start("Sequence", "flaky", ()).await;
    let hangs = env.start("Hangs", "hangs", ()).await;
    let done = env.done(&seq).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert!(
        flaky.load(Ordering::SeqCst) >= 5,
        "asked again after each error"
    );
    let letter = env
        .dead_letter_containing("the hanging start dead-lettered", hangs.as_str())
        .await;
    assert!(letter.reason.contains("deliver"), "{}", letter.reason);
    let status = find(&env.client, &hangs).await.unwrap();
    assert!(!status.status().is_terminal());
    env.shutdown().await;
}

/// An executor whose first `orchestrate` (or, with `only`, every one of that orchestration)
/// never answers: its future counts its drop.
struct Stalls {
    sdk: Sdk,
    only: Option<&'static str>,
    asked: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

impl RemoteExecutor for Stalls {
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        let stall = match self.only {
            Some(name) => work.name == name,
            None => n == 0,
        };
        if stall {
            return never_answers(&self.dropped);
        }
        self.sdk.orchestrate(work)
    }

    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome> {
        self.sdk.run_activity(work)
    }
}

impl Stalls {
    /// Waits until the first decision is out.
    async fn until_asked(&self) {
        wait::until(
            "the decision is out",
            || self.asked.load(Ordering::SeqCst) >= 1,
            || self.asked.load(Ordering::SeqCst),
        )
        .await;
    }
}

fn stalls() -> (Arc<Stalls>, Arc<AtomicUsize>) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let s = Arc::new(Stalls {
        sdk: the_sdk(),
        only: None,
        asked: AtomicUsize::new(0),
        dropped: dropped.clone(),
    });
    (s, dropped)
}

async fn a_lease_lost_while_a_decision_is_out_commits_nothing(backend: Backend) {
    let (stalls, dropped) = stalls();
    let env = env(backend, stalls.clone(), short_lease(settings(backend))).await;
    let i = env.start("Sequence", "stalled", ()).await;
    stalls.until_asked().await;
    let stolen = steal_the_lease(env.hub.store().as_ref()).await;
    wait::until(
        "the executor's future is dropped",
        || dropped.load(Ordering::SeqCst) == 1,
        || dropped.load(Ordering::SeqCst),
    )
    .await;
    assert!(
        env.history(&i).await.is_empty(),
        "nothing committed under the old epoch"
    );
    let worker = env.worker.as_ref().unwrap();
    assert_eq!(
        worker.stats().checkpoint_conflicts,
        0,
        "no checkpoint was even tried"
    );
    // The thief never renews: the worker takes the partition back and the SDK answers.
    let done = env.done(&i).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert!(
        worker.partitions()[&0] > stolen,
        "committed under a newer lease"
    );
    let starts = env
        .history(&i)
        .await
        .iter()
        .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
        .count();
    assert_eq!(starts, 1);
    env.shutdown().await;
}

async fn a_stopping_worker_withdraws_its_decision(backend: Backend) {
    let (stalls, dropped) = stalls();
    let mut env = env(backend, stalls.clone(), short_lease(settings(backend))).await;
    let i = env.start("Sequence", "stopped", ()).await;
    stalls.until_asked().await;
    let clock = env.hub.clock().clone();
    let before = clock.monotonic();
    env.worker.take().unwrap().shutdown().await;
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the executor's future was dropped"
    );
    assert!(
        clock.monotonic() - before < env.hub.settings().shutdown_timeout,
        "the shutdown did not wait for the decision"
    );
    assert!(env.history(&i).await.is_empty());
    // The start was given back at once: a new worker finishes it.
    env.worker = Some(
        Worker::start_with_executor(&env.hub, rust_registry(), Arc::new(the_sdk()))
            .await
            .unwrap(),
    );
    assert_eq!(env.done(&i).await.status(), OrchestrationStatus::Completed);
    env.shutdown().await;
}

async fn a_decision_out_holds_up_no_other_instance(backend: Backend) {
    let stalls = Arc::new(Stalls {
        sdk: the_sdk(),
        only: Some("Gate"),
        asked: AtomicUsize::new(0),
        dropped: Arc::new(AtomicUsize::new(0)),
    });
    // One processing slot, one buffer slot, one activity slot, one partition: a wait that
    // held any of them would stop the rest.
    let settings = Settings {
        partition_count: 1,
        max_concurrent_orchestrations: 1,
        control_queue_batch_size: 1,
        control_queue_buffer_threshold: 1,
        max_concurrent_activities: 1,
        ..settings(backend)
    };
    let env = env(backend, stalls.clone(), settings).await;
    let waiting = env.start("Gate", "never-answered", ()).await;
    stalls.until_asked().await;
    let rust = env.start("RustChild", "rust-meanwhile", 1u64).await;
    let remote = env.start("Sequence", "remote-meanwhile", ()).await;
    assert_eq!(env.done(&rust).await.output::<u64>().unwrap(), Some(101));
    assert_eq!(
        env.done(&remote).await.status(),
        OrchestrationStatus::Completed
    );
    let row = find(&env.client, &waiting).await.unwrap();
    assert!(!row.status().is_terminal(), "the stalled one still waits");
    env.shutdown().await;
}

async fn a_remote_activity_keeps_its_work_item_hidden(backend: Backend) {
    // The activity takes three visibility timeouts; a second worker polls the work-item
    // queue all along (the first one cannot: its only activity slot is busy): it would run
    // the activity again if the work item reappeared.
    let sdk = Arc::new(the_sdk().slow("Hello", Duration::from_secs(3)));
    let settings = Settings {
        work_item_visibility_timeout: Duration::from_secs(1),
        max_concurrent_activities: 1,
        ..settings(backend)
    };
    let env = env(backend, sdk.clone(), settings).await;
    let other = Worker::start_with_executor(&env.hub, rust_registry(), sdk.clone())
        .await
        .unwrap();
    let i = env.start("Events", "slow", ()).await;
    env.until_status(&i, r#""waiting a""#).await;
    let runs = sdk
        .ran
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.name == "Hello")
        .count();
    eprintln!(
        "A {:?} B {:?}",
        env.worker.as_ref().unwrap().stats(),
        other.stats()
    );
    assert_eq!(runs, 1, "the activity ran once");
    other.shutdown().await;
    env.shutdown().await;
}

/// An executor whose first `run_activity` calls fail: four `Unavailable`, then one
/// `Abandoned`.
struct FlakyActivities {
    sdk: Sdk,
    calls: AtomicUsize,
}

impl RemoteExecutor for FlakyActivities {
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision> {
        self.sdk.orchestrate(work)
    }

    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome> {
        let what = format!("activity '{}'", work.name);
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0..=3 => Box::pin(async move { Err(ExecutorError::Unavailable { what }) }),
            4 => Box::pin(async move {
                Err(ExecutorError::Abandoned {
                    what,
                    reason: "the worker disconnected".into(),
                })
            }),
            _ => self.sdk.run_activity(work),
        }
    }
}

async fn activity_executor_errors_give_the_work_item_back(backend: Backend) {
    let flaky = Arc::new(FlakyActivities {
        sdk: the_sdk().orchestration("One", |r: &mut Replay| {
            let hello = step!(r.activity("Hello", "again"));
            End::Complete(serde_json::from_str(hello.as_str()).unwrap())
        }),
        calls: AtomicUsize::new(0),
    });
    // Five failed runs, one of them counted: within three deliveries only if `Unavailable`
    // is not counted.
    let settings = Settings {
        max_dequeue_count: 3,
        ..settings(backend)
    };
    let env = env(backend, flaky.clone(), settings).await;
    let i = env.start("One", "flaky-activity", ()).await;
    let done = env.done(&i).await;
    assert_eq!(
        done.output::<String>().unwrap().as_deref(),
        Some("Hello again!")
    );
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 6);
    assert!(env
        .client
        .list_dead_letters(None, 10)
        .await
        .unwrap()
        .is_empty());
    env.shutdown().await;
}

/// A remote durable timer on a `ManualClock` (memory backend, paused Tokio time, as
/// `timers/long.rs`): it fires at its time, not a second earlier.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_remote_timer_fires_at_its_time_on_a_manual_clock() {
    use taskhub_storage::memory::MemoryStore;
    use taskhub_storage::ManualClock;
    const HOUR: Duration = Duration::from_secs(3600);
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let hub = TaskHub::open_with_clock(store, common::fast_settings(), clock.clone())
        .await
        .unwrap();
    let sdk = Arc::new(the_sdk().orchestration("Nap", |r: &mut Replay| {
        if r.timer(r.started_at.saturating_add(HOUR)) {
            End::Complete(true.into())
        } else {
            End::Pending
        }
    }));
    let worker = Worker::start_with_executor(&hub, rust_registry(), sdk.clone())
        .await
        .unwrap();
    let client = hub.client();
    let i = client.start("Nap", ()).await.unwrap();
    until_paused("the first turn", TEN_S, || worker.stats().turns >= 1).await;
    clock.advance(HOUR - Duration::from_secs(1));
    wait::idle().await;
    assert_eq!(
        status_of(&client, &i).await,
        OrchestrationStatus::Running,
        "not a second early"
    );
    assert_eq!(
        sdk.asked_for(&i).len(),
        1,
        "the executor was not asked again"
    );
    clock.advance(Duration::from_secs(1));
    // The clock stands still from here on.
    advance_until_completed(
        &client,
        &i,
        &clock,
        Duration::ZERO,
        "the timer fired at its time",
    )
    .await;
    worker.shutdown().await;
}

/// An executor that never answers: the runtime's own deadline (half the control queue's
/// visibility timeout, so the batch never reappears while the question is out) drops the
/// question, the batch goes back counted, and the next ask finishes the instance. On a
/// `ManualClock` (memory backend, paused Tokio time).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_decision_that_never_comes_times_out_before_its_messages_reappear() {
    let settings = common::fast_settings();
    let half = settings.control_queue_visibility_timeout / 2;
    let ManualMemoryHub { clock, hub, .. } = manual_memory_hub(settings).await;
    let (stalls, dropped) = stalls();
    let worker = Worker::start_with_executor(&hub, rust_registry(), stalls.clone())
        .await
        .unwrap();
    let client = hub.client();
    let i = client.start("Sequence", ()).await.unwrap();
    until_paused("the decision is asked for", TEN_S, || {
        stalls.asked.load(Ordering::SeqCst) >= 1
    })
    .await;
    clock.advance(half - Duration::from_secs(1));
    wait::idle().await;
    assert_eq!(dropped.load(Ordering::SeqCst), 0, "not a second early");
    assert_eq!(stalls.asked.load(Ordering::SeqCst), 1);
    clock.advance(Duration::from_secs(1));
    until_paused("the question is dropped at the deadline", TEN_S, || {
        dropped.load(Ordering::SeqCst) >= 1
    })
    .await;
    // Back after EXECUTOR_RETRY (1 s), asked again; the SDK answers this time.
    clock.advance(Duration::from_secs(2));
    let step = Duration::from_millis(100);
    advance_until_completed(&client, &i, &clock, step, "the next ask finishes it").await;
    assert!(stalls.asked.load(Ordering::SeqCst) >= 2);
    worker.shutdown().await;
}

/// An executor whose backlog is full answers `Busy`: the batch goes back uncounted and is
/// asked again only after `BUSY_RETRY` (5 s), not after the 1 s of other refusals, so work that
/// cannot wait is not loaded and refused over and over. On a `ManualClock`.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_busy_executor_is_asked_again_after_five_seconds_uncounted() {
    let settings = Settings {
        // Three refusals would dead-letter the start if they were counted.
        max_dequeue_count: 2,
        ..common::fast_settings()
    };
    let ManualMemoryHub { clock, hub, .. } = manual_memory_hub(settings).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let sdk = Arc::new(the_sdk().interpose(move |w: &OrchestrationWork, _| {
        (w.name == "Sequence" && a.fetch_add(1, Ordering::SeqCst) < 3).then(|| {
            Err(ExecutorError::Busy {
                what: "busy".into(),
                why: "the backlog is full".into(),
            })
        })
    }));
    let worker = Worker::start_with_executor(&hub, rust_registry(), sdk)
        .await
        .unwrap();
    let client = hub.client();
    let i = client.start("Sequence", ()).await.unwrap();
    let asked_times = |n: usize| asked.load(Ordering::SeqCst) >= n;
    until_paused("the first ask", TEN_S, || asked_times(1)).await;
    for n in 2..=3 {
        clock.advance(Duration::from_secs(4));
        wait::idle().await;
        assert_eq!(
            asked.load(Ordering::SeqCst),
            n - 1,
            "not asked again within 4 s"
        );
        clock.advance(Duration::from_secs(2));
        until_paused(&format!("asked again after 5 s ({n})"), TEN_S, || {
            asked_times(n)
        })
        .await;
    }
    let step = Duration::from_millis(200);
    let what = "completed once the executor takes it, nothing dead-lettered";
    advance_until_completed(&client, &i, &clock, step, what).await;
    assert!(client.list_dead_letters(None, 10).await.unwrap().is_empty());
    worker.shutdown().await;
}
