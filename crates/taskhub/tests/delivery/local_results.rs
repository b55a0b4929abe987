//! Activity results handed over in-process (`worker/activity/local.rs`): on the worker that holds the
//! orchestration's partition, a result skips the control queue and the turn that records it
//! deletes the work item, in one checkpoint. When that turn cannot commit under the lease the
//! result was handed over under (a bump fenced it), the result goes the ordinary way — through
//! the control queue — and the activity still runs once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::registries::{add_call, add_counted_inc, add_fan_out, add_inc, add_seq};
use crate::common::run::{completes_within, run_to_end};
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_storage::instrumented::Instrumented;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Operation, SystemClock, TaskHubStore};

const STEPS: u64 = 5;

fn sequence(runs: Arc<AtomicUsize>) -> Registry {
    let mut reg = Registry::new();
    add_counted_inc(&mut reg, runs);
    add_seq(&mut reg);
    reg
}

fn settings() -> Settings {
    Settings {
        partition_count: 1,
        ..fast_settings()
    }
}

async fn one_checkpoint_per_step<S: TaskHubStore + 'static>(inner: S) {
    let store = Instrumented::new(inner);
    let metrics = store.metrics();
    let store: Arc<dyn TaskHubStore> = Arc::new(store);
    let runs = Arc::new(AtomicUsize::new(0));
    let hub = TaskHub::open(store, settings()).await.unwrap();
    let worker = Worker::start(&hub, sequence(runs.clone())).await.unwrap();
    let client = hub.client();
    let done = run_to_end(&client, "Seq", STEPS, Duration::from_secs(30)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(STEPS));
    assert_eq!(runs.load(Ordering::SeqCst) as u64, STEPS);
    let checkpoints = metrics.snapshot().calls(Operation::Checkpoint);
    // The client's start, the first turn, and one turn per result. Through the control queue
    // each result would add its own commit (result sent, work item deleted): 2 × STEPS + 2.
    assert!(
        checkpoints <= STEPS + 2,
        "{checkpoints} checkpoints for {STEPS} activities: results took the control queue"
    );
    assert_eq!(worker.stats().activities, STEPS);
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_commits_with_its_turn_in_memory() {
    one_checkpoint_per_step(MemoryStore::new(Arc::new(SystemClock::new()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_commits_with_its_turn_on_sqlite() {
    let dir = TempDir::new("local-results");
    let opts = taskhub_sqlite::SqliteOptions::new(dir.0.join("hub.db"))
        .with_clock(Arc::new(SystemClock::new()));
    one_checkpoint_per_step(taskhub_sqlite::SqliteStore::open(opts).unwrap()).await;
}

/// The activity bumps its own partition's epoch: its result is handed over under an epoch
/// that storage no longer accepts, so the turn is fenced and the result falls back to the
/// control queue (with the work item's delete). Nothing runs twice and nothing is lost.
async fn bump_while_the_activity_runs(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut reg = Registry::new();
    {
        let runs = runs.clone();
        let hub = hub.clone();
        reg.activity("BumpThenInc", move |_ctx: ActivityContext, x: u64| {
            let runs = runs.clone();
            let hub = hub.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                hub.admin()
                    .bump(0)
                    .await
                    .map_err(|e| ActivityError::new(format!("bump: {e}")))?;
                Ok::<_, ActivityError>(x + 1)
            }
        });
    }
    reg.orchestration("Two", |ctx: OrchestrationContext, x: u64| async move {
        let a: u64 = ctx.call_activity("BumpThenInc", x).await?;
        let b: u64 = ctx.call_activity("BumpThenInc", a).await?;
        Ok::<_, OrchestrationError>(b)
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("Two", 40u64).await.unwrap();
    let done = match client
        .wait_for_completion(&id, Duration::from_secs(60))
        .await
    {
        Ok(done) => done,
        Err(e) => panic!(
            "the instance did not complete ({e}); worker {worker:?}, partitions {:?}",
            worker.partitions()
        ),
    };
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(42));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "each activity ran once");
    let letters = store.list_dead_letters(None, 100).await.unwrap();
    assert!(letters.is_empty(), "dead letters: {letters:?}");
    worker.shutdown().await;
}

memory_and_sqlite!(
    bump_while_the_activity_runs, "local-results-bump":
    a_result_fenced_by_a_bump_takes_the_control_queue_in_memory,
    a_result_fenced_by_a_bump_takes_the_control_queue_on_sqlite,
);

/// A fan-out whose results arrive faster than turns commit them: results waiting for a turn
/// hold their activity slots (not the control-queue prefetch buffer, here 4 slots), so none of
/// them is pushed to the control queue: every checkpoint is a turn or the client's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_keeps_its_results_in_process() {
    let store = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let metrics = store.metrics();
    let store: Arc<dyn TaskHubStore> = Arc::new(store);
    let mut reg = Registry::new();
    add_inc(&mut reg);
    add_fan_out(&mut reg, "Fan", "Inc");
    let settings = Settings {
        control_queue_buffer_threshold: 4,
        control_queue_batch_size: 4,
        ..settings()
    };
    let hub = TaskHub::open(store, settings).await.unwrap();
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let done = run_to_end(&client, "Fan", 200u64, Duration::from_secs(60)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some((1..=200).sum()));
    let turns = worker.stats().turns;
    let checkpoints = metrics.snapshot().calls(Operation::Checkpoint);
    assert_eq!(
        checkpoints,
        turns + 1,
        "{checkpoints} checkpoints for {turns} turns: some results took the control queue"
    );
    worker.shutdown().await;
}

/// A handed-over result whose turn is slow to come (here its history load takes three
/// visibility timeouts): the work item is renewed while it waits, so the activity runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_waiting_for_a_slow_turn_keeps_its_work_item_hidden() {
    use taskhub_storage::memory::{FaultPlan, Op, Trigger};

    const VISIBILITY: Duration = Duration::from_secs(10);
    let settings = Settings {
        partition_count: 1,
        work_item_visibility_timeout: VISIBILITY,
        // Every batch loads the history, so the result's turn waits for the slow load.
        extended_sessions_enabled: false,
        ..fast_settings()
    };
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(settings).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut reg = Registry::new();
    {
        let (runs, store) = (runs.clone(), store.clone());
        reg.activity("Once", move |_ctx: ActivityContext, x: u64| {
            let (runs, store) = (runs.clone(), store.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                // The next history load (the result's turn) takes three visibility timeouts.
                store.faults().set_plan(
                    FaultPlan::none().delay(Trigger::nth_of(Op::LoadHistory, 1), VISIBILITY * 3),
                );
                Ok::<_, ActivityError>(x + 1)
            }
        });
    }
    add_call(&mut reg, "One", "Once");
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("One", 1u64).await.unwrap();
    let advancing = keep_advancing_by(&clock, Duration::from_millis(5), Duration::from_millis(100));
    let done = completes_within(&client, &id, Duration::from_secs(60), "it completes").await;
    advancing.abort();
    assert_eq!(done.output::<u64>().unwrap(), Some(2));
    let delayed = store
        .faults()
        .injected()
        .iter()
        .filter(|i| i.op == Op::LoadHistory)
        .count();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the activity ran once");
    assert_eq!(delayed, 1, "the result's turn met the slow load");
    // The clock stands still now: a renewer still asleep on it would hold the shutdown up.
    tokio::time::timeout(Duration::from_secs(30), worker.shutdown())
        .await
        .expect("no renewer outlives its work item");
}

/// A handed-over result waiting for its turn gives its activity slot back: with one activity
/// slot, an instance whose result's turn is stuck (its history load waits on a clock that
/// stands still) does not stop another instance's activities. While the result kept the slot,
/// the other instance's work items could not be claimed, and its poller waited for the slot
/// as long as the stuck turn did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_waiting_for_its_turn_leaves_its_activity_slot_to_others() {
    use taskhub_storage::memory::{FaultPlan, Op, Trigger};

    let settings = Settings {
        partition_count: 1,
        max_concurrent_activities: 1,
        // Every batch loads the history, so the stuck result's turn waits for its load.
        extended_sessions_enabled: false,
        ..fast_settings()
    };
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(settings).await;
    let stuck_runs = Arc::new(AtomicUsize::new(0));
    let mut reg = sequence(Arc::new(AtomicUsize::new(0)));
    {
        let (runs, store) = (stuck_runs.clone(), store.clone());
        reg.activity("Stall", move |_ctx: ActivityContext, x: u64| {
            let (runs, store) = (runs.clone(), store.clone());
            async move {
                // The next history load (this result's turn) waits an hour on the clock.
                store.faults().set_plan(FaultPlan::none().delay(
                    Trigger::nth_of(Op::LoadHistory, 1),
                    Duration::from_secs(3600),
                ));
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ActivityError>(x)
            }
        });
    }
    add_call(&mut reg, "Stuck", "Stall");
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let stuck = client.start("Stuck", 7u64).await.unwrap();
    wait::until(
        "the stalling activity ran",
        || stuck_runs.load(Ordering::SeqCst) > 0,
        || stuck_runs.load(Ordering::SeqCst),
    )
    .await;
    let other = client.start("Seq", STEPS).await.unwrap();
    let what = "the other instance's activities ran beside the stuck result";
    let done = completes_within(&client, &other, Duration::from_secs(30), what).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(STEPS));
    assert_eq!(
        status_of(&client, &stuck).await,
        OrchestrationStatus::Running
    );
    // Let the stuck turn's load finish: the instance completes, its activity run once.
    clock.advance(Duration::from_secs(3600));
    let what = "the stuck instance completes once its load does";
    let done = completes_within(&client, &stuck, Duration::from_secs(30), what).await;
    assert_eq!(done.output::<u64>().unwrap(), Some(7));
    assert_eq!(stuck_runs.load(Ordering::SeqCst), 1);
    tokio::time::timeout(Duration::from_secs(30), worker.shutdown())
        .await
        .expect("shuts down");
}
