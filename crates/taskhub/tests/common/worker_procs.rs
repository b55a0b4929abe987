//! What the multi-process tests share (`workers.rs`, `paused_checkpoint.rs`,
//! `postgres_restart.rs`): a fresh hub the worker processes find, the settings of the
//! three-kills scenario, the activity log, signals, and the checks of every instance.
//! Included as `#[path = "common/worker_procs.rs"] mod worker_procs;` next to `mod common;` and
//! `#[path = "common/backends.rs"] mod backends;`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    reason = "test support"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use taskhub::*;

use crate::backends::{self, Backend};
use crate::common::{child, wait, TempDir};

pub const SEQ: u64 = 3;
pub const FAN: u64 = 2;
/// How long any one wait of this test may take.
pub const BOUND: Duration = Duration::from_secs(180);

pub fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        // A killed worker's running activities come back after this.
        work_item_visibility_timeout: Duration::from_secs(5),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        partition_count: 8,
        ..backends::settings(backends::Backend::Postgres)
    }
}

pub async fn owners(hub: &TaskHub) -> BTreeMap<u32, Option<String>> {
    hub.store()
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.partition, r.owner))
        .collect()
}

/// Activity runs logged so far.
pub fn logged_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("activity.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

pub async fn until_runs(dir: &Path, n: usize) {
    wait::until(
        &format!("{n} activity runs"),
        || logged_runs(dir) >= n,
        || logged_runs(dir),
    )
    .await;
}

/// Checks a completed instance: the right output, each task scheduled and completed exactly
/// once in its history, which it returns.
pub async fn check_completed(
    client: &TaskHubClient,
    id: &InstanceId,
    base: u64,
    s: &InstanceStatus,
) -> Vec<HistoryEvent> {
    assert_eq!(s.status(), OrchestrationStatus::Completed, "{id}");
    assert_eq!(
        s.output::<u64>().unwrap(),
        Some(child::expected(base, SEQ, FAN)),
        "{id}"
    );
    let history = client
        .get_status(id, StatusOptions { history: true })
        .await
        .unwrap()
        .unwrap()
        .history
        .unwrap();
    let seen = child::task_event_counts(&history);
    assert_eq!(
        seen.len(),
        usize::try_from(2 * (SEQ + FAN)).unwrap(),
        "{id}: every task scheduled and completed"
    );
    assert!(
        seen.values().all(|c| *c == 1),
        "{id}: an event was applied twice"
    );
    history
}

/// Checks every instance: completed, the right output, a clean history (one start, one
/// completion), nothing dead-lettered.
pub async fn check_instances(hub: &TaskHub, ids: &[(InstanceId, u64)]) {
    let client = hub.client();
    for (id, base) in ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => panic!("{id} never finished: {e}; owners {:?}", owners(hub).await),
        };
        let history = check_completed(&client, id, *base, &s).await;
        check_linear(&history, id);
    }
    let letters = hub.store().list_dead_letters(None, 10).await.unwrap();
    assert!(letters.is_empty(), "dead-lettered: {letters:?}");
}

/// Checks that a history is one linear chain: one start and one completion.
pub fn check_linear(history: &[HistoryEvent], id: &InstanceId) {
    let count = |f: fn(&EventKind) -> bool| history.iter().filter(|e| f(&e.event)).count();
    assert_eq!(
        (
            count(|e| matches!(e, EventKind::ExecutionStarted { .. })),
            count(|e| matches!(e, EventKind::ExecutionCompleted { .. }))
        ),
        (1, 1),
        "{id}: one ExecutionStarted and one ExecutionCompleted"
    );
}

/// A fresh hub of `backend` that the worker processes started in the returned dir work on.
pub async fn fresh_hub(backend: Backend, tag: &str, settings: Settings) -> (TempDir, TaskHub) {
    let dir = TempDir::new(&format!("{backend}-{tag}"));
    let hub_name = backends::unique_hub_name();
    backends::write_hub_file(&dir.0, backend, &hub_name);
    let store = backends::open_hub_store(backend, &dir.0, &hub_name).await;
    let hub = TaskHub::open(store.store, settings).await.unwrap();
    (dir, hub)
}

/// Starts `n` orchestrations `name`, returning each ID with its base (the input).
pub async fn start_all(hub: &TaskHub, name: &str, n: u64) -> Vec<(InstanceId, u64)> {
    let client = hub.client();
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push((client.start(name, i * 1000).await.unwrap(), i * 1000));
    }
    ids
}

/// Sends `sig` (`-STOP`, `-CONT`) to a worker process.
pub fn signal(proc: &child::Proc, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &proc.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {}", proc.child.id());
}

/// Closes each worker's stdin and checks that it shuts down gracefully.
pub fn stop_gracefully<'a>(workers: impl IntoIterator<Item = &'a mut child::Proc>) {
    for w in workers {
        drop(w.child.stdin.take());
        assert!(
            w.child.wait().unwrap().success(),
            "graceful shutdown of {}",
            w.name
        );
    }
}
