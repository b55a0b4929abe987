//! Checkpoints torn after the rows and blobs written ahead of their commit: an orchestration
//! whose first turn schedules more activities than one table batch holds (so Azure writes
//! event rows ahead of the sentinel's batch) and one activity input over the inline limit (so
//! the event goes to a blob first) has that turn torn, again and again, right before its
//! commit (`TearAfter::AheadWritten`). The rows and blobs left behind stay invisible: the
//! instance finishes with the right output, no event twice, and a purge removes the leftovers
//! too. On memory (which writes nothing ahead) and on Azure (Azurite):
//! `scripts/with-azurite.sh cargo test -p taskhub --test storage_faults torn_ahead_rows::`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::backends;
use crate::common;
use crate::common::history::with_history;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, InjectedFault, TearAfter};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{SystemClock, TaskHubStore};

/// More activities than one table batch (100 operations) holds.
const ACTIVITIES: u64 = 110;
/// An activity input over the inline property limit (30,000 bytes): its event is a blob.
const BIG: usize = 35_000;
/// How many attempts of the first turn are torn before one commits.
const TEARS: u64 = 3;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Len", |_c: ActivityContext, text: String| async move {
        Ok::<_, ActivityError>(text.len() as u64)
    });
    reg.orchestration("Wide", |ctx: OrchestrationContext, n: u64| async move {
        let calls = (0..n)
            .map(|i| "x".repeat((i % 7) as usize))
            .chain(std::iter::once("y".repeat(BIG)))
            .map(|text| ctx.call_activity::<_, u64>("Len", text));
        let mut sum = 0;
        for r in when_all(calls).await {
            sum += r?;
        }
        Ok::<_, OrchestrationError>(sum)
    });
    reg
}

fn expected() -> u64 {
    (0..ACTIVITIES).map(|i| i % 7).sum::<u64>() + BIG as u64
}

/// Starts `Wide`, tears the first `TEARS` checkpoints after their ahead-of-commit writes,
/// runs a worker and checks the outcome. Returns the instance ID (purged) and the store.
async fn torn_first_turns_recover(
    backend: Arc<dyn TaskHubStore>,
    settings: Settings,
) -> InstanceId {
    let store = Arc::new(FaultyStore::new(
        backend,
        Arc::new(SystemClock::new()),
        FaultPlan::none(),
    ));
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let client = hub.client();
    let id = client.start("Wide", ACTIVITIES).await.unwrap();
    // The next checkpoints are the first turn's attempts (no worker ran yet).
    store
        .faults()
        .set_plan((1..=TEARS).fold(FaultPlan::none(), |plan, n| {
            plan.tear_checkpoint(n, TearAfter::AheadWritten)
        }));
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let done = client
        .wait_for_completion(&id, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{id} did not finish: {e}"));
    let torn = store
        .faults()
        .injected()
        .into_iter()
        .filter(|i| i.fault == InjectedFault::Torn(TearAfter::AheadWritten))
        .count();
    assert_eq!(torn as u64, TEARS, "every planned tear happened");
    assert_eq!(
        done.status(),
        OrchestrationStatus::Completed,
        "{:?}",
        done.row.failure
    );
    assert_eq!(done.output::<u64>().unwrap(), Some(expected()));

    let status = with_history(&client, &id).await;
    let mut counts: HashMap<String, u32> = HashMap::new();
    for e in status.history.unwrap() {
        let key = match &e.event {
            EventKind::TaskScheduled { task_id, .. } => format!("sched {task_id}"),
            EventKind::TaskCompleted { task_id, .. } => format!("done {task_id}"),
            EventKind::ExecutionStarted { .. } => "start".into(),
            EventKind::ExecutionCompleted { .. } => "completed".into(),
            _ => continue,
        };
        *counts.entry(key).or_insert(0) += 1;
    }
    assert_eq!(counts.len() as u64, 2 * (ACTIVITIES + 1) + 2, "{counts:?}");
    assert!(
        counts.values().all(|c| *c == 1),
        "an event was written twice: {counts:?}"
    );
    worker.shutdown().await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_recovers_from_checkpoints_torn_after_their_ahead_writes() {
    let backend = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let settings = Settings {
        control_queue_visibility_timeout: Duration::from_millis(800),
        work_item_visibility_timeout: Duration::from_millis(800),
        ..common::fast_settings()
    };
    torn_first_turns_recover(backend, settings).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_recovers_from_checkpoints_torn_after_their_ahead_rows_and_blobs() {
    let azure = backends::azure_store(&backends::unique_hub_name()).await;
    let settings = Settings {
        control_queue_visibility_timeout: Duration::from_secs(2),
        work_item_visibility_timeout: Duration::from_secs(3),
        ..backends::settings(backends::Backend::Azure)
    };
    let id = torn_first_turns_recover(azure.clone(), settings.clone()).await;

    // The torn attempts left rows and blobs behind, invisible to every load.
    let (rows, blobs) = azure.history_footprint(&id).await.unwrap();
    let events = azure.load_history_len(&id).await;
    assert!(
        rows > events + 1,
        "the torn attempts' ahead rows are still there ({rows} rows, {events} events + the sentinel)"
    );
    assert!(
        blobs > 1,
        "the torn attempts' event blobs are still there ({blobs} blobs)"
    );
    // A purge removes them with the rest.
    let hub = TaskHub::open(azure.clone(), settings).await.unwrap();
    assert!(hub.client().purge(&id).await.unwrap());
    assert_eq!(azure.history_footprint(&id).await.unwrap(), (0, 0));
}

trait HistoryLen {
    async fn load_history_len(&self, id: &InstanceId) -> usize;
}

impl HistoryLen for taskhub_azure::AzureStore {
    async fn load_history_len(&self, id: &InstanceId) -> usize {
        use taskhub_storage::HistoryStore as _;
        self.load_history(id).await.unwrap().unwrap().events.len()
    }
}
