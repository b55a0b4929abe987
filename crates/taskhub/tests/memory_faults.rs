//! The runtime on the memory backend, whose checkpoint is NOT atomic, under seeded storage
//! faults and torn checkpoints: every instance still completes with the right output, no event
//! is applied to a history twice, and no instance row is left behind its history.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, MemoryStore};
use taskhub_storage::{StorageError, SystemClock};

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration("Work", |ctx: OrchestrationContext, base: u64| async move {
        let mut sum = 0;
        for i in 0..3 {
            sum += ctx.call_activity::<_, u64>("Double", base + i).await?;
        }
        ctx.sleep(Duration::from_millis(30)).await;
        for r in
            when_all((0..3).map(|i| ctx.call_activity::<_, u64>("Double", base + 10 + i))).await
        {
            sum += r?;
        }
        let extra: u64 = ctx.wait_for_event("extra").await?;
        Ok::<_, OrchestrationError>(sum + extra)
    });
    reg
}

fn expected(base: u64) -> u64 {
    (0..3).map(|i| (base + i) * 2).sum::<u64>()
        + (0..3).map(|i| (base + 10 + i) * 2).sum::<u64>()
        + 1
}

async fn retry<T, F, Fut>(mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, TaskhubError>>,
{
    for _ in 0..200 {
        match f().await {
            Ok(v) => return v,
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("non-retryable client error: {e}"),
        }
    }
    panic!("client call kept failing");
}

async fn run_seed(seed: u64) {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let settings = Settings {
        control_queue_visibility_timeout: Duration::from_millis(800),
        work_item_visibility_timeout: Duration::from_millis(800),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let n = 30u64;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(client.start("Work", i * 100).await.unwrap());
    }
    store.faults().set_plan(
        FaultPlan::none()
            .random(seed, 0.03, StorageError::Unavailable("injected".into()))
            .random_tears(0.15),
    );
    for id in &ids {
        retry(|| client.raise_event(id, "extra", &1u64)).await;
    }
    for id in &ids {
        loop {
            match client
                .wait_for_completion(id, Duration::from_secs(60))
                .await
            {
                Ok(_) => break,
                Err(e) if e.is_retryable() => {}
                Err(e) => panic!("seed {seed}: {id}: {e}"),
            }
        }
    }
    let injected = store.faults().injected().len();
    store.faults().set_plan(FaultPlan::none());
    for (i, id) in ids.iter().enumerate() {
        let s = client
            .get_status(id, StatusOptions { history: true })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            s.status(),
            OrchestrationStatus::Completed,
            "seed {seed}: {id}: {:?}",
            s.row.failure
        );
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(expected(i as u64 * 100)),
            "seed {seed}: {id}"
        );
        let mut counts: HashMap<String, u32> = HashMap::new();
        for e in s.history.unwrap() {
            let key = match &e.event {
                EventKind::TaskCompleted { task_id, .. } => format!("done {task_id}"),
                EventKind::TaskScheduled { task_id, .. } => format!("sched {task_id}"),
                EventKind::TimerFired { task_id, .. } => format!("fired {task_id}"),
                EventKind::EventRaised { .. } => "event".into(),
                EventKind::ExecutionStarted { .. } => "start".into(),
                _ => continue,
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        assert!(
            counts.values().all(|c| *c == 1),
            "seed {seed}: {id}: an event was applied twice: {counts:?}"
        );
    }
    assert!(injected > 0, "seed {seed}: the plan injected no fault");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known bug: under CPU load an instance can get stuck with injected faults; run with --ignored while fixing"]
async fn runtime_survives_faults_and_torn_checkpoints() {
    for seed in 1..=4 {
        run_seed(seed).await;
    }
}
