//! A loader whose history is older than the instance row must not "repair" the row back.
//!
//! A loader reads the history, then the row. If it stalls in between (a worker paused past its
//! lease, as `postgres_paused_checkpoint` does with SIGSTOP) while a newer owner finishes the
//! instance, it reads a Completed row next to a Running history and judges the row behind.
//! Written unguarded, its repair turned the newer owner's Completed row back to Running, and
//! with the messages already consumed by the newer owner, nothing ever came to fix it: the
//! instance looked Running for ever (the CI failure of `postgres_paused_checkpoint`). The
//! repair is a fenced checkpoint conditional on the history it judged, so it fails and the
//! loader reloads.
//!
//! Here the worker's first `get_instance` is held for 3 s; meanwhile the test finishes the
//! instance the way a newer owner would (history and row in one checkpoint), and the worker's
//! first checkpoint (the repair, or without the guard the turn after it) is held 2 s, so an
//! unguarded repair would leave the row Running for at least that long while the test polls it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, Op, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{
    CheckpointRequest, Clock, Expect, HistoryWrite, QueueName, SystemClock, TaskHubStore,
};

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Waits", |ctx: OrchestrationContext, (): ()| async move {
        let v: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(v)
    });
    reg
}

/// Finishes `id` as a newer owner would: `ExecutionCompleted` appended to its history and its
/// row Completed, in one checkpoint.
async fn finish_elsewhere(store: &Arc<dyn TaskHubStore>, id: &InstanceId, output: u64) {
    let history = store.load_history(id).await.unwrap().unwrap();
    let mut row = store.get_instance(id).await.unwrap().unwrap();
    let etag = row.etag.clone().unwrap();
    let result = Payload::to_payload(&output, "output").unwrap();
    let now = SystemClock::new().now();
    row.status = OrchestrationStatus::Completed;
    row.output = Some(result.clone());
    row.completed_at = Some(now);
    row.updated_at = now;
    store
        .checkpoint(CheckpointRequest {
            instance_id: id.clone(),
            fence: None,
            history: Some(HistoryWrite {
                execution_id: history.execution_id.clone(),
                expected: Some(history.etag.clone()),
                new_execution: false,
                events: vec![HistoryEvent::new(
                    now,
                    EventKind::ExecutionCompleted { result },
                )],
            }),
            instance: Some((row, Expect::ETag(etag))),
            outbound: Vec::new(),
            consumed: Vec::new(),
        })
        .await
        .unwrap();
}

async fn status_of(store: &Arc<dyn TaskHubStore>, id: &InstanceId) -> OrchestrationStatus {
    store.get_instance(id).await.unwrap().unwrap().status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loader_with_an_older_history_never_turns_a_completed_row_back() {
    let dir = TempDir::new("stale-row-repair");
    let inner = sqlite_store(&dir.0);
    let hub = TaskHub::open(inner.clone(), fast_settings()).await.unwrap();
    let client = hub.client();

    // The instance runs its first turn and waits for "go".
    let first = Worker::start(&hub, registry()).await.unwrap();
    let id = client.start("Waits", ()).await.unwrap();
    wait::until_async(
        "the first turn",
        || {
            let store = inner.clone();
            let id = id.clone();
            async move { status_of(&store, &id).await == OrchestrationStatus::Running }
        },
        || async {},
    )
    .await;
    first.shutdown().await;

    // A second worker whose load stalls between the history and the row.
    let faulty = Arc::new(FaultyStore::new(
        inner.clone(),
        Arc::new(SystemClock::new()),
        FaultPlan::none()
            .delay(Trigger::nth_of(Op::GetInstance, 1), Duration::from_secs(3))
            .delay(Trigger::nth_of(Op::Checkpoint, 1), Duration::from_secs(2)),
    ));
    let stalled_hub = TaskHub::open(faulty.clone(), fast_settings())
        .await
        .unwrap();
    let second = Worker::start(&stalled_hub, registry()).await.unwrap();
    client.raise_event(&id, "go", &7u64).await.unwrap();
    wait::until(
        "the second worker to read the history and stall on the row",
        || {
            faulty.faults().calls(Op::LoadHistory) >= 1
                && faulty.faults().calls(Op::GetInstance) >= 1
        },
        || (),
    )
    .await;
    finish_elsewhere(&inner, &id, 42).await;

    // The row stays Completed while the stalled loader wakes, judges and retries, and after.
    let partition = inner.get_instance(&id).await.unwrap().unwrap().partition;
    let started = Instant::now();
    loop {
        assert_eq!(
            status_of(&inner, &id).await,
            OrchestrationStatus::Completed,
            "{:?} after the newer owner finished the instance",
            started.elapsed()
        );
        let queued = inner.stats(QueueName::Control(partition)).await.unwrap();
        if started.elapsed() > Duration::from_secs(6) && queued.length == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the event was never consumed"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let done = wait_done(&client, &id, Duration::from_secs(5)).await;
    assert_eq!(
        done.output::<u64>().unwrap(),
        Some(42),
        "the newer owner's output"
    );
    let history = inner.load_history(&id).await.unwrap().unwrap();
    let completions = history
        .events
        .iter()
        .filter(|e| matches!(e.event, EventKind::ExecutionCompleted { .. }))
        .count();
    assert_eq!(completions, 1, "the stale session's turn never committed");
    second.shutdown().await;
}
