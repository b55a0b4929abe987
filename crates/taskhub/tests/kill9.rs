//! A worker process killed with SIGKILL mid-run and restarted, again and again: every instance
//! completes with the right output, no event is applied to a history twice, and activities
//! re-run only when they were running in a killed process.
//!
//! The test re-executes its own binary as the worker process (the `child_worker` entry point,
//! ignored unless started by this test).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use taskhub::*;

const DB_VAR: &str = "TASKHUB_KILL9_DB";
const LOG_VAR: &str = "TASKHUB_KILL9_LOG";

fn registry(log: std::path::PathBuf) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Work", move |ctx: ActivityContext, x: u64| {
        let log = log.clone();
        async move {
            // Record every execution (instance, task) so duplicates can be counted.
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)?;
            // One write call per line: O_APPEND keeps concurrent lines whole.
            f.write_all(format!("{} {}\n", ctx.instance_id(), ctx.task_id()).as_bytes())?;
            tokio::time::sleep(Duration::from_millis(10 + x % 23)).await;
            Ok::<_, ActivityError>(x * 2)
        }
    });
    reg.orchestration("Chain", |ctx: OrchestrationContext, base: u64| async move {
        let mut sum = 0;
        for i in 0..6 {
            sum += ctx.call_activity::<_, u64>("Work", base + i).await?;
        }
        let fan =
            when_all((0..4).map(|i| ctx.call_activity::<_, u64>("Work", base + 100 + i))).await;
        for r in fan {
            sum += r?;
        }
        Ok::<_, OrchestrationError>(sum)
    });
    reg
}

/// Messages of a killed worker reappear after the visibility timeout, and its partitions are
/// taken over after the lease interval: keep both short here.
fn kill_settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        work_item_visibility_timeout: Duration::from_secs(3),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        ..fast_settings()
    }
}

fn expected(base: u64) -> u64 {
    (0..6).map(|i| (base + i) * 2).sum::<u64>() + (0..4).map(|i| (base + 100 + i) * 2).sum::<u64>()
}

#[test]
#[ignore = "entry point of the worker process started by kill9_workers_lose_nothing"]
fn child_worker() {
    let (Ok(db), Ok(log)) = (std::env::var(DB_VAR), std::env::var(LOG_VAR)) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = sqlite_store(std::path::Path::new(&db));
        let hub = TaskHub::open(store, kill_settings()).await.unwrap();
        let _worker = Worker::start(&hub, registry(log.into())).await.unwrap();
        println!("ready");
        std::future::pending::<()>().await;
    });
}

fn spawn_worker(dir: &std::path::Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_worker",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(DB_VAR, dir)
        .env(LOG_VAR, dir.join("activity.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_workers_lose_nothing() {
    let dir = TempDir::new("kill9");
    let hub = TaskHub::open(sqlite_store(&dir.0), kill_settings())
        .await
        .unwrap();
    let client = hub.client();
    let n = 300u64;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(client.start("Chain", i * 1000).await.unwrap());
    }
    let mut kills = 0;
    let mut child = spawn_worker(&dir.0);
    for round in 0..6 {
        tokio::time::sleep(Duration::from_millis(300 + 200 * round)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        child = spawn_worker(&dir.0);
    }
    for (i, id) in ids.iter().enumerate() {
        let s = client
            .wait_for_completion(id, Duration::from_secs(120))
            .await
            .unwrap();
        assert_eq!(
            s.status(),
            OrchestrationStatus::Completed,
            "{id}: {:?}",
            s.row.failure
        );
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(expected(i as u64 * 1000)),
            "{id}"
        );
        let history = client
            .get_status(id, StatusOptions { history: true })
            .await
            .unwrap()
            .unwrap()
            .history
            .unwrap();
        let mut scheduled = HashMap::new();
        let mut completed = HashMap::new();
        for e in &history {
            match &e.event {
                EventKind::TaskScheduled { task_id, .. } => {
                    *scheduled.entry(*task_id).or_insert(0) += 1
                }
                EventKind::TaskCompleted { task_id, .. } => {
                    *completed.entry(*task_id).or_insert(0) += 1
                }
                _ => {}
            }
        }
        assert_eq!(scheduled.len(), 10, "{id}");
        assert!(
            scheduled
                .values()
                .chain(completed.values())
                .all(|c| *c == 1),
            "{id}: an event was applied twice"
        );
        assert_eq!(
            history
                .iter()
                .filter(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
                .count(),
            1
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let log = std::fs::read_to_string(dir.0.join("activity.log")).unwrap();
    let mut runs: HashMap<&str, u32> = HashMap::new();
    for line in log.lines() {
        *runs.entry(line).or_insert(0) += 1;
    }
    assert_eq!(runs.len() as u64, n * 10, "every activity ran");
    let reruns: u32 = runs.values().map(|c| c - 1).sum();
    // Only activities running in a killed process may run again: at most the worker's
    // concurrency limit per kill.
    let bound = kills * hub.settings().max_concurrent_activities as u32;
    assert!(
        reruns <= bound,
        "{reruns} re-runs for {kills} kills (bound {bound})"
    );
    eprintln!("kill9: {n} instances, {kills} kills, {reruns} activity re-runs");
}
