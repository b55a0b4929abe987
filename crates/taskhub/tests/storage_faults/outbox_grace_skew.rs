//! The torn-outbox grace is timed by the loader's own clock, not by comparing the writer's
//! wall clock with the loader's (issue 20, item 4; DESIGN invariant 7).
//!
//! A checkpoint torn right after its history commit leaves its outbox pending (the work item
//! of an activity, not sent). A loader re-sends it only once its writer cannot still be sending
//! it: after a lease interval. The time the outbox was written is the writer's wall clock;
//! compared with the loader's, a loader ahead by more than a lease re-sends at once (had the
//! writer been alive and still sending, the activity would have run twice), and one behind
//! stalls until its clock catches up. Here the writer (worker A, memory backend, whose ordered
//! checkpoint is the one Azure runs) tears its checkpoint and stops; worker B, whose wall clock
//! is 20 s (ten lease intervals) ahead or behind, takes over. B must re-send the outbox a lease
//! interval after it first sees it, no sooner and not much later.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::skewed_clock::SkewedClock;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, InjectedFault, TearAfter};
use taskhub_storage::HistoryStore;

const LEASE: Duration = Duration::from_secs(2);
const SKEW: Duration = Duration::from_secs(20);

fn settings() -> Settings {
    Settings {
        lease_interval: LEASE,
        // Under a lease with the work-item poll: the grace is the lease interval.
        work_item_visibility_timeout: Duration::from_secs(1),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_millis(500),
        ..fast_settings()
    }
}

#[derive(Default)]
struct Runs {
    count: AtomicU32,
    first: Mutex<Option<Instant>>,
}

fn registry(runs: &Arc<Runs>) -> Registry {
    let mut reg = Registry::new();
    let runs = runs.clone();
    reg.activity("Count", move |_c: ActivityContext, x: u64| {
        let runs = runs.clone();
        async move {
            runs.count.fetch_add(1, Ordering::SeqCst);
            runs.first.lock().unwrap().get_or_insert_with(Instant::now);
            Ok::<_, ActivityError>(x * 2)
        }
    });
    reg.orchestration("Step", |ctx: OrchestrationContext, x: u64| async move {
        let y = ctx.call_activity::<_, u64>("Count", x).await?;
        let go: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(y + go)
    });
    reg
}

/// Worker A tears the checkpoint that schedules the activity and stops; worker B, its wall
/// clock `ahead_ms` off A's, loads the instance (an event for it arrives). Returns how long
/// after B could first see the pending outbox the activity ran.
async fn resend_after(ahead_ms: i64) -> Duration {
    let runs = Arc::new(Runs::default());
    let store = memory_store();
    let hub_a = TaskHub::open(store.clone(), settings()).await.unwrap();
    let id = hub_a.client().start("Step", 21u64).await.unwrap();
    // The next checkpoint is the first turn's: torn after its history commit, so its work
    // item stays in the pending outbox, unsent.
    store
        .faults()
        .set_plan(FaultPlan::none().tear_checkpoint(1, TearAfter::HistoryCommitted));
    let a = Worker::start(&hub_a, registry(&runs)).await.unwrap();
    wait::until(
        "A's first turn torn",
        || {
            store
                .faults()
                .injected()
                .iter()
                .any(|i| i.fault == InjectedFault::Torn(TearAfter::HistoryCommitted))
        },
        || store.faults().injected(),
    )
    .await;
    a.shutdown().await;
    let pending = store.load_history(&id).await.unwrap().unwrap();
    assert_eq!(pending.pending_outbox.len(), 1, "the work item is pending");
    assert_eq!(runs.count.load(Ordering::SeqCst), 0, "A re-sent it already");

    let skewed = Arc::new(SkewedClock::new(ahead_ms));
    let hub_b = TaskHub::open_with_clock(store.clone(), settings(), skewed)
        .await
        .unwrap();
    let seen_from = Instant::now();
    let b = Worker::start(&hub_b, registry(&runs)).await.unwrap();
    let client = hub_b.client();
    client.raise_event(&id, "go", &1u64).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(120)).await;
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(43));
    assert_eq!(
        runs.count.load(Ordering::SeqCst),
        1,
        "the activity ran once"
    );
    b.shutdown().await;
    let first = runs.first.lock().unwrap().expect("the activity ran");
    first.duration_since(seen_from)
}

/// A loader whose clock is ahead must not take a fresh outbox for an old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loader_ahead_waits_a_lease_of_its_own_time() {
    let after = resend_after(i64::try_from(SKEW.as_millis()).unwrap()).await;
    assert!(
        after >= LEASE,
        "a loader 20 s ahead re-sent the pending outbox {after:?} after it could first see \
         it; it must watch it for a lease interval ({LEASE:?}) of its own time first"
    );
}

/// A loader whose clock is behind must not wait for its clock to catch up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loader_behind_does_not_stall() {
    let after = resend_after(-i64::try_from(SKEW.as_millis()).unwrap()).await;
    assert!(
        after >= LEASE && after < LEASE * 4,
        "a loader 20 s behind re-sent the pending outbox {after:?} after it could first see \
         it; expected a lease interval ({LEASE:?}) of its own time, not its clock's lag"
    );
}
