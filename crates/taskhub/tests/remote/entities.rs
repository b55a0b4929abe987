//! The executor seam for entities: the batches of entities not registered in the worker's
//! registry run in a `RemoteExecutor` (here an in-process fake SDK running a counter), with
//! everything else the runtime's: signals from a client in order, a failed operation rolled
//! back, an entity's signal to another, calls and a critical section from a Rust
//! orchestration; executor errors give the batch back (counted or not, by kind, so a batch
//! that hangs every worker ends in the dead letters, but takes none of its batch-mates with
//! it: a batch delivered before asks one operation at a time and only the failing one's
//! message is counted; one held in the record fails at the last delivery; all of a batch's
//! questions share one deadline); a lease lost while a batch is out drops
//! the executor's future and commits nothing. On the memory backend and SQLite; the first on
//! Azure Storage too (Azurite: `scripts/with-azurite.sh`, as `scripts/test.sh` runs them).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backends::{settings, Backend, TestStore};
use crate::common;
use crate::common::remote::{
    flaky_or_hanging, never_answers, short_lease, steal_the_lease, EntitiesOnly, EntityRunner,
    RemoteEnv,
};
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::STUCK;
use crate::common::{start_as, until_paused, wait_done};
use taskhub::executor::{EntityBatchOutcome, EntityWork, ExecutorError, ExecutorFuture};
use taskhub::*;
use taskhub_core::entity::{EntityAction, EntityId};
use taskhub_test_support::wait;

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    remote_entities_run_signals_calls_and_critical_sections,
    executor_errors_give_the_batch_back_counted_by_kind,
    a_hanging_operation_takes_none_of_its_batch_mates_to_the_dead_letters,
    a_hanging_operation_held_in_the_record_fails_at_the_last_delivery,
    a_lease_lost_while_a_batch_is_out_commits_nothing,
);

mod on_azure {
    use super::*;
    taskhub_test_support::backend_matrix!(
        [azure]
        remote_entities_run_signals_calls_and_critical_sections,
    );
}

fn counter(key: &str) -> EntityId {
    EntityId::new("counter", key).unwrap()
}

/// What the fake SDK does with a batch before running it: `Some` answers instead.
type Interpose =
    Box<dyn Fn(&EntityWork) -> Option<Result<EntityBatchOutcome, ExecutorError>> + Send + Sync>;

/// A fake SDK worker running one entity, `counter` (add, get, fail, forward), the way the SDKs
/// do: operations one after the other against the state, a failed one rolled back.
struct FakeSdk {
    asked: AtomicUsize,
    interpose: Option<Interpose>,
    /// Stall (never answer) the first batch; counts its future's drop.
    stall_first: bool,
    dropped: Arc<AtomicUsize>,
}

impl FakeSdk {
    fn new() -> Self {
        Self {
            asked: AtomicUsize::new(0),
            interpose: None,
            stall_first: false,
            dropped: Arc::new(AtomicUsize::new(0)),
        }
    }
}

fn run_counter(work: &EntityWork) -> EntityBatchOutcome {
    let mut state: i64 = work.state.as_ref().map_or(0, |s| s.parse("state").unwrap());
    let mut results = Vec::new();
    let mut actions = Vec::new();
    for op in &work.operations {
        let input: Option<i64> = op.input.parse("input").ok();
        let result = match op.name.as_str() {
            "add" => {
                state += input.unwrap_or(0);
                Ok(Payload::to_payload(&state, "out").unwrap())
            }
            "get" => Ok(Payload::to_payload(&state, "out").unwrap()),
            "forward" => {
                let to: String = op.input.parse("input").unwrap();
                actions.push(EntityAction::Signal {
                    target: counter(&to),
                    op: "add".into(),
                    input: Payload::to_payload(&10, "in").unwrap(),
                    at: None,
                });
                state += 1;
                Ok(Payload::null())
            }
            other => Err(FailureDetails::new(
                "ValueError",
                format!("counter refuses '{other}'"),
            )),
        };
        results.push(result);
    }
    EntityBatchOutcome::new(results, Some(Payload::to_payload(&state, "state").unwrap()))
        .with_actions(actions)
}

impl EntityRunner for FakeSdk {
    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        if self.stall_first && n == 0 {
            return never_answers(&self.dropped);
        }
        let answer = self
            .interpose
            .as_ref()
            .and_then(|f| f(&work))
            .unwrap_or_else(|| Ok(run_counter(&work)));
        Box::pin(async move { answer })
    }
}

/// Rust orchestrations calling the remote entity.
fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration(
        "Caller",
        |ctx: OrchestrationContext, key: String| async move {
            let e = counter(&key);
            let a: i64 = ctx.call_entity(&e, "add", &5).await?;
            let b: i64 = ctx.call_entity(&e, "get", &()).await?;
            let failed = match ctx.call_entity::<_, i64>(&e, "explode", &()).await {
                Ok(_) => "no failure".to_owned(),
                Err(err) => err.to_string(),
            };
            let after: i64 = ctx.call_entity(&e, "get", &()).await?;
            Ok::<_, OrchestrationError>((a, b, failed, after))
        },
    );
    reg.orchestration(
        "Locker",
        |ctx: OrchestrationContext, keys: (String, String)| async move {
            let (x, y) = (counter(&keys.0), counter(&keys.1));
            let section = ctx.lock_entities(&[x.clone(), y.clone()]).await?;
            let a: i64 = ctx.call_entity(&x, "add", &1).await?;
            let b: i64 = ctx.call_entity(&y, "add", &1).await?;
            section.release();
            Ok::<_, OrchestrationError>(a + b)
        },
    );
    // Locks one entity and holds it until the event `go`.
    reg.orchestration(
        "Hold",
        |ctx: OrchestrationContext, key: String| async move {
            let section = ctx.lock_entities(&[counter(&key)]).await?;
            ctx.set_custom_status(&"inside")?;
            let () = ctx.wait_for_event("go").await?;
            section.release();
            Ok::<_, OrchestrationError>(())
        },
    );
    reg
}

type Env = RemoteEnv<TestStore>;

async fn env(backend: Backend, sdk: Arc<FakeSdk>, settings: Settings) -> Env {
    let store = TestStore::fresh(backend, "remote-entities").await;
    let hub = TaskHub::open(store.store.clone(), settings).await.unwrap();
    RemoteEnv::with_worker(hub, store, registry(), Arc::new(EntitiesOnly(sdk))).await
}

impl Env {
    async fn state(&self, e: &EntityId) -> Option<i64> {
        self.client.read_entity_state(e).await.unwrap()
    }

    async fn until_state(&self, e: &EntityId, want: i64) {
        wait::until_some(&format!("{e} at {want}"), || async move {
            (self.state(e).await == Some(want)).then_some(())
        })
        .await;
    }

    async fn run(
        &self,
        name: &str,
        instance: &str,
        input: impl serde::Serialize,
    ) -> InstanceStatus {
        let i = InstanceId::new(instance).unwrap();
        let i = start_as(&self.client, name, &i, input).await;
        wait_done(&self.client, &i, STUCK).await
    }
}

async fn remote_entities_run_signals_calls_and_critical_sections(backend: Backend) {
    let sdk = Arc::new(FakeSdk::new());
    let env = env(backend, sdk.clone(), settings(backend)).await;
    let a = counter("a");
    for n in 1..=3 {
        env.client.signal_entity(&a, "add", &n).await.unwrap();
    }
    env.client.signal_entity(&a, "explode", &()).await.unwrap();
    env.client.signal_entity(&a, "add", &10).await.unwrap();
    env.until_state(&a, 16).await;
    // An entity's signal to another.
    env.client.signal_entity(&a, "forward", "b").await.unwrap();
    env.until_state(&counter("b"), 10).await;
    env.until_state(&a, 17).await;
    // Calls from a Rust orchestration: results, and a failure (rolled back).
    let done = env.run("Caller", "caller", "c").await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");
    let (x, y, failed, after): (i64, i64, String, i64) =
        done.row.output.as_ref().unwrap().parse("out").unwrap();
    assert_eq!((x, y, after), (5, 5, 5));
    assert!(failed.contains("counter refuses 'explode'"), "{failed}");
    // A critical section over two remote entities.
    let done = env.run("Locker", "locker", ("x", "y")).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");
    // The release reaches both entities: a signal then runs.
    for key in ["x", "y"] {
        env.client
            .signal_entity(&counter(key), "add", &100)
            .await
            .unwrap();
        env.until_state(&counter(key), 101).await;
        let meta = env.client.get_entity(&counter(key)).await.unwrap().unwrap();
        assert_eq!(meta.locked_by, None, "released");
    }
    assert!(sdk.asked.load(Ordering::SeqCst) >= 5);
    env.shutdown().await;
}

async fn executor_errors_give_the_batch_back_counted_by_kind(backend: Backend) {
    let flaky = Arc::new(AtomicUsize::new(0));
    let f = flaky.clone();
    let mut sdk = FakeSdk::new();
    // Four uncounted refusals are more than max_dequeue_count deliveries.
    sdk.interpose = Some(Box::new(move |w: &EntityWork| {
        flaky_or_hanging(w.entity.key(), "flaky", "hangs", &f)
    }));
    let settings = Settings {
        max_dequeue_count: 2,
        ..settings(backend)
    };
    let env = env(backend, Arc::new(sdk), settings).await;
    env.client
        .signal_entity(&counter("flaky"), "add", &3)
        .await
        .unwrap();
    env.client
        .signal_entity(&counter("hangs"), "add", &3)
        .await
        .unwrap();
    env.until_state(&counter("flaky"), 3).await;
    assert!(
        flaky.load(Ordering::SeqCst) >= 5,
        "asked again after each error"
    );
    let letter = env
        .dead_letter_containing("the hanging signal dead-lettered", "@counter@hangs")
        .await;
    assert!(letter.reason.contains("deliver"), "{}", letter.reason);
    assert_eq!(env.state(&counter("hangs")).await, None);
    env.shutdown().await;
}

/// A batch mixing client signals, a Rust orchestration's lock request (and later its calls
/// and release) and one operation the SDK never answers (`hang`, always timed out): the first
/// delivery fails as a whole (counted), the next ones ask one operation at a time, so only
/// `hang`'s message is counted again and reaches the dead letters; every other message runs,
/// the section's calls are answered and its release unlocks the entity.
async fn a_hanging_operation_takes_none_of_its_batch_mates_to_the_dead_letters(backend: Backend) {
    let open = Arc::new(AtomicBool::new(false));
    let gate = open.clone();
    let mut sdk = FakeSdk::new();
    sdk.interpose = Some(Box::new(move |w: &EntityWork| {
        if !gate.load(Ordering::SeqCst) {
            // Until the test opens the gate no worker is connected (uncounted): the messages
            // gather into one batch.
            return Some(Err(ExecutorError::Unavailable {
                what: "closed".into(),
            }));
        }
        w.operations.iter().any(|o| o.name == "hang").then(|| {
            Err(ExecutorError::TimedOut {
                what: "hang".into(),
                seconds: 0,
            })
        })
    }));
    let sdk = Arc::new(sdk);
    let settings = Settings {
        max_dequeue_count: 2,
        ..settings(backend)
    };
    let env = env(backend, sdk.clone(), settings).await;
    let mix = counter("mix");
    env.client.signal_entity(&mix, "add", &1).await.unwrap();
    env.client.signal_entity(&mix, "hang", &()).await.unwrap();
    env.client.signal_entity(&mix, "add", &2).await.unwrap();
    let options = StartOptions {
        instance_id: Some(InstanceId::new("mix-locker").unwrap()),
        ..StartOptions::default()
    };
    let locker = env
        .client
        .start_with("Locker", ("mix", "mix2"), options)
        .await
        .unwrap();
    wait::until_some("the lock request is sent", || async {
        let status = env
            .client
            .get_status(&locker, StatusOptions { history: true })
            .await
            .unwrap()?;
        status
            .history?
            .iter()
            .any(|e| matches!(e.event, EventKind::EventSent { .. }))
            .then_some(())
    })
    .await;
    // Two more closed rounds: the lock request is in the batch (or granted alone).
    let asked = sdk.asked.load(Ordering::SeqCst);
    wait::until(
        "two more rounds",
        || sdk.asked.load(Ordering::SeqCst) >= asked + 2,
        || sdk.asked.load(Ordering::SeqCst),
    )
    .await;
    open.store(true, Ordering::SeqCst);

    let done = wait_done(&env.client, &locker, STUCK).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");
    env.until_state(&mix, 4).await;
    env.until_state(&counter("mix2"), 1).await;
    // The release goes out with the locker's completion and is run after it: wait for it
    // (the states may reach their values before it is applied).
    let client = &env.client;
    for e in [&mix, &counter("mix2")] {
        wait::until_some(&format!("{e} released"), || async move {
            let meta = client.get_entity(e).await.unwrap().unwrap();
            meta.locked_by.is_none().then_some(())
        })
        .await;
    }
    // Only the hanging operation may be in the dead letters.
    let letters = env.client.list_dead_letters(None, 100).await.unwrap();
    for l in &letters {
        assert!(
            l.body.contains("hang"),
            "a batch-mate was dead-lettered: {}",
            l.body
        );
    }
    env.shutdown().await;
}

/// Operations that waited in the record for a critical section (no message of their own) run
/// in the batch of the section's release; one of them never answered by the SDK fails with
/// `OperationNotAnswered` at that batch's last delivery, so the release is not dead-lettered:
/// the entity is unlocked and the other operation runs.
async fn a_hanging_operation_held_in_the_record_fails_at_the_last_delivery(backend: Backend) {
    let mut sdk = FakeSdk::new();
    sdk.interpose = Some(Box::new(|w: &EntityWork| {
        w.operations.iter().any(|o| o.name == "hang").then(|| {
            Err(ExecutorError::TimedOut {
                what: "hang".into(),
                seconds: 0,
            })
        })
    }));
    let settings = Settings {
        max_dequeue_count: 2,
        ..settings(backend)
    };
    let env = env(backend, Arc::new(sdk), settings).await;
    let e = counter("held");
    let options = StartOptions {
        instance_id: Some(InstanceId::new("holder").unwrap()),
        ..StartOptions::default()
    };
    let holder = env
        .client
        .start_with("Hold", "held", options)
        .await
        .unwrap();
    wait::until_some("the section is held", || async {
        let meta = env.client.get_entity(&e).await.unwrap()?;
        meta.locked_by.map(|_| ())
    })
    .await;
    env.client.signal_entity(&e, "add", &1).await.unwrap();
    env.client.signal_entity(&e, "hang", &()).await.unwrap();
    wait::until_some("both wait in the record", || async {
        let meta = env.client.get_entity(&e).await.unwrap()?;
        (meta.queued >= 2).then_some(())
    })
    .await;
    env.client.raise_event(&holder, "go", &()).await.unwrap();
    let done = wait_done(&env.client, &holder, STUCK).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed, "{done:?}");
    env.until_state(&e, 1).await;
    let meta = env.client.get_entity(&e).await.unwrap().unwrap();
    assert_eq!(meta.locked_by, None, "released");
    let letters = env.client.list_dead_letters(None, 100).await.unwrap();
    assert!(letters.is_empty(), "{letters:?}");
    env.shutdown().await;
}

async fn a_lease_lost_while_a_batch_is_out_commits_nothing(backend: Backend) {
    let mut sdk = FakeSdk::new();
    sdk.stall_first = true;
    let dropped = sdk.dropped.clone();
    let sdk = Arc::new(sdk);
    let env = env(backend, sdk.clone(), short_lease(settings(backend))).await;
    let e = counter("stalled");
    env.client.signal_entity(&e, "add", &7).await.unwrap();
    wait::until(
        "the batch is out",
        || sdk.asked.load(Ordering::SeqCst) >= 1,
        || sdk.asked.load(Ordering::SeqCst),
    )
    .await;
    let stolen = steal_the_lease(env.hub.store().as_ref()).await;
    wait::until(
        "the executor's future is dropped",
        || dropped.load(Ordering::SeqCst) == 1,
        || dropped.load(Ordering::SeqCst),
    )
    .await;
    assert!(
        env.client.get_entity(&e).await.unwrap().is_none(),
        "nothing committed under the old epoch"
    );
    let worker = env.worker.as_ref().unwrap();
    assert_eq!(
        worker.stats().checkpoint_conflicts,
        0,
        "no checkpoint was even tried"
    );
    // The thief never renews: the worker takes the partition back and the SDK answers.
    env.until_state(&e, 7).await;
    assert!(
        worker.partitions()[&0] > stolen,
        "committed under a newer lease"
    );
    env.shutdown().await;
}

/// An executor whose first question takes `first` (on the hub's clock) and whose second never
/// answers (counting its future's drop).
struct SlowThenStuck {
    clock: Arc<dyn taskhub_storage::Clock>,
    first: Duration,
    asked: AtomicUsize,
    dropped: Arc<AtomicUsize>,
}

impl EntityRunner for SlowThenStuck {
    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        if n == 0 {
            let sleep = self.clock.sleep(self.first);
            return Box::pin(async move {
                sleep.await;
                Ok(run_counter(&work))
            });
        }
        never_answers(&self.dropped)
    }
}

/// A batch split by a delete asks twice, and both questions together wait no longer than
/// the runtime's one deadline (half the control queue's visibility timeout): the second
/// question gets what the first left of it. On a `ManualClock` (memory backend, paused Tokio
/// time).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_batch_split_by_a_delete_waits_one_deadline_in_all() {
    let settings = common::fast_settings();
    let half = settings.control_queue_visibility_timeout / 2;
    let ManualMemoryHub { clock, hub, .. } = manual_memory_hub(settings).await;
    let client = hub.client();
    // One batch: an operation, a delete, an operation.
    let e = counter("split");
    client.signal_entity(&e, "add", &1).await.unwrap();
    client.delete_entity(&e).await.unwrap();
    client.signal_entity(&e, "add", &2).await.unwrap();
    let ten = Duration::from_secs(10);
    let dropped = Arc::new(AtomicUsize::new(0));
    let sdk = Arc::new(SlowThenStuck {
        clock: clock.clone(),
        first: half - ten,
        asked: AtomicUsize::new(0),
        dropped: dropped.clone(),
    });
    let worker = Worker::start_with_executor(&hub, registry(), Arc::new(EntitiesOnly(sdk.clone())))
        .await
        .unwrap();
    let asked = |n: usize| sdk.asked.load(Ordering::SeqCst) >= n;
    until_paused("asked once", Duration::from_secs(10), || asked(1)).await;
    clock.advance(half - ten);
    until_paused("asked twice", Duration::from_secs(10), || asked(2)).await;
    clock.advance(ten - Duration::from_secs(1));
    wait::idle().await;
    assert_eq!(dropped.load(Ordering::SeqCst), 0, "not a second early");
    clock.advance(Duration::from_secs(1));
    until_paused(
        "the second question is dropped at the batch's deadline",
        Duration::from_secs(10),
        || dropped.load(Ordering::SeqCst) >= 1,
    )
    .await;
    assert!(
        client.get_entity(&e).await.unwrap().is_none(),
        "nothing committed"
    );
    worker.shutdown().await;
}
