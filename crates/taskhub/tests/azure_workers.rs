//! Three worker processes share one task hub on Azure Storage (Azurite): one is killed with
//! SIGKILL mid-run, one is paused with SIGSTOP until the others have taken its partitions (past
//! its lease) and then resumed with SIGCONT. Every instance completes with the right output, no
//! event is applied twice, and an activity runs more than once only if an earlier run was in
//! the killed process, or its instance is on a partition the killed or paused worker held (a
//! checkpoint torn between its enqueue and the clearing of its pending outbox is re-sent by the
//! instance's next loader, once: the loader clears it). The pause is shorter than the work items' visibility timeout, so
//! the paused worker's running activities are not handed to anyone else.
//!
//! The test re-executes its own binary as the worker process (`azure_worker_process`, ignored
//! unless started by this test; the hub's name is in the file `azure-hub` of the test's dir).
//! Run with Azurite up: `scripts/with-azurite.sh cargo test -p taskhub --test azure_workers`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use taskhub::*;

const SEQ: u64 = 3;
const FAN: u64 = 2;
const INSTANCES: u64 = 150;
/// How long any one wait of this test may take.
const BOUND: Duration = Duration::from_secs(120);

fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        // Longer than the pause below, shorter than the test: the paused worker keeps its
        // activities; the killed worker's come back after this.
        work_item_visibility_timeout: Duration::from_secs(15),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        ..backends::settings(backends::Backend::Azure)
    }
}

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn azure_worker_process() {
    if let Some((dir, log)) = child::child_env() {
        backends::run_azure_child(&dir, settings(), child::registry(log, SEQ, FAN));
    }
}

fn signal(proc: &child::Proc, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &proc.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {}", proc.child.id());
}

async fn owners(hub: &TaskHub) -> BTreeMap<u32, Option<String>> {
    hub.store()
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.partition, r.owner))
        .collect()
}

/// The partitions `name` holds now.
async fn partitions_of(hub: &TaskHub, name: &str) -> BTreeSet<u32> {
    owners(hub)
        .await
        .into_iter()
        .filter(|(_, o)| o.as_deref() == Some(name))
        .map(|(p, _)| p)
        .collect()
}

/// Waits until `f` holds for the partition owners.
async fn until_owners(
    hub: &TaskHub,
    what: &str,
    f: impl Fn(&BTreeMap<u32, Option<String>>) -> bool,
) {
    wait::until_async(what, || async { f(&owners(hub).await) }, || owners(hub)).await;
}

/// Activity runs logged so far.
fn logged_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("activity.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

async fn until_runs(dir: &Path, n: usize) {
    wait::until(
        &format!("{n} activity runs"),
        || logged_runs(dir) >= n,
        || logged_runs(dir),
    )
    .await;
}

/// What a stuck instance looks like: its row, history and the queues.
async fn diagnose(hub: &TaskHub, id: &InstanceId) -> String {
    let status = hub
        .client()
        .get_status(id, StatusOptions { history: true })
        .await;
    let mut queues = Vec::new();
    for p in 0..hub.partition_count() {
        let q = taskhub_storage::QueueName::Control(p);
        queues.push((q, hub.store().stats(q).await.map(|s| s.length)));
    }
    let w = taskhub_storage::QueueName::WorkItems;
    queues.push((w, hub.store().stats(w).await.map(|s| s.length)));
    format!(
        "partition {}; status {status:#?}; queues {queues:?}; owners {:?}",
        id.partition(hub.partition_count()),
        owners(hub).await
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_on_azure_survive_a_kill_and_a_pause_past_the_lease() {
    let dir = TempDir::new("azure-workers");
    let hub_name = backends::unique_hub_name();
    std::fs::write(dir.0.join(backends::AZURE_HUB_FILE), &hub_name).unwrap();
    let hub = TaskHub::open(backends::azure_store(&hub_name).await, settings())
        .await
        .unwrap();
    let client = hub.client();
    let mut ids = Vec::new();
    for i in 0..INSTANCES {
        ids.push((client.start("Chain", i * 1000).await.unwrap(), i * 1000));
    }
    let mut workers: Vec<child::Proc> = (0..3)
        .map(|_| child::spawn("azure_worker_process", &dir.0))
        .collect();
    let names: Vec<String> = workers.iter().map(|w| w.name.clone()).collect();
    until_owners(&hub, "every worker to hold a partition", |o| {
        names
            .iter()
            .all(|n| o.values().any(|v| v.as_deref() == Some(n.as_str())))
    })
    .await;
    let total = usize::try_from(INSTANCES * (SEQ + FAN)).unwrap();
    let began = Instant::now();

    // Kill one worker mid-run.
    until_runs(&dir.0, total / 5).await;
    // The victims hold partitions (their checkpoints are in flight), the most loaded first.
    let o = owners(&hub).await;
    let held = |w: &child::Proc| {
        o.values()
            .filter(|v| v.as_deref() == Some(w.name.as_str()))
            .count()
    };
    workers.sort_by_key(|w| std::cmp::Reverse(held(w)));
    let killed_partitions = partitions_of(&hub, &workers[0].name).await;
    let killed = workers[0].child.id();
    workers[0].child.kill().unwrap(); // SIGKILL
    workers[0].child.wait().unwrap();

    // Pause another until the others hold every partition (its lease has expired and been
    // taken over), then let it go on.
    until_runs(&dir.0, total * 2 / 5).await;
    if partitions_of(&hub, &workers[1].name).await.is_empty() {
        workers.swap(1, 2);
    }
    let survivor = workers[2].name.clone();
    let paused = workers[1].child.id();
    let paused_name = workers[1].name.clone();
    let paused_partitions = partitions_of(&hub, &paused_name).await;
    let pause = Instant::now();
    signal(&workers[1], "-STOP");
    until_owners(&hub, "the running worker to hold every partition", |o| {
        o.values().all(|v| v.as_deref() == Some(survivor.as_str()))
    })
    .await;
    let paused_for = pause.elapsed();
    signal(&workers[1], "-CONT");
    assert!(
        paused_for < settings().work_item_visibility_timeout,
        "the pause ({paused_for:?}) must stay under the work-item visibility timeout for the \
         strict re-run check below"
    );
    eprintln!(
        "{:?}: {paused_name} (pid {paused}, partitions {paused_partitions:?}) paused for \
         {paused_for:?}; pid {killed} killed",
        began.elapsed()
    );

    // Every instance completes with the right output; no event was applied twice.
    for (id, base) in &ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => panic!("{e}: {}", diagnose(&hub, id).await),
        };
        assert_eq!(s.status(), OrchestrationStatus::Completed, "{id}");
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(child::expected(*base, SEQ, FAN)),
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
    }
    // The resumed worker gets partitions back (it is live again): every partition is held
    // by one of the two running workers.
    let running: BTreeSet<String> = workers[1..].iter().map(|w| w.name.clone()).collect();
    until_owners(&hub, "the partitions held by running workers", |o| {
        o.values()
            .all(|v| v.as_ref().is_some_and(|v| running.contains(v)))
    })
    .await;
    for w in &mut workers[1..] {
        drop(w.child.stdin.take());
        assert!(
            w.child.wait().unwrap().success(),
            "graceful shutdown of {}",
            w.name
        );
    }

    eprintln!("{:?}: all instances completed", began.elapsed());

    // Activity runs: every one ran. A second run only (a) after a run in the killed process, or
    // (b) for an instance of a partition the killed or the paused worker held: a checkpoint it
    // was making can be torn after its enqueue and before its pending outbox was cleared, and
    // the instance's next loader re-sends the outbox, so an activity that checkpoint scheduled
    // runs again — once: the loader clears the outbox in the same fenced, ETag-conditional
    // step (docs/INVARIANTS.md, "When an activity may run twice", case 4). The second result is
    // discarded by message ID (the history check above). Never for an instance on the
    // partitions only the undisturbed worker held, and at most once per disturbed worker.
    let runs = child::activity_runs(&dir.0);
    assert_eq!(runs.len(), total, "every activity ran");
    let partitions = hub.partition_count();
    let torn: BTreeSet<u32> = killed_partitions
        .union(&paused_partitions)
        .copied()
        .collect();
    let (mut after_kill, mut after_torn) = (0, 0);
    for ((instance, task), pids) in &runs {
        let after_live = pids[..pids.len() - 1]
            .iter()
            .filter(|p| **p != killed)
            .count();
        // One extra run per torn checkpoint of the instance, and each disturbed worker (the
        // killed one, the paused one) tears at most one: its turn, or a loader's re-send that
        // it was making (seen: [paused, other, paused] — the killed worker's torn turn re-sent
        // by the paused worker, whose re-send was torn by the pause and re-sent once more).
        assert!(
            after_live <= 2,
            "{instance} task {task} ran again more than twice after runs in live processes: \
             a torn checkpoint's outbox is re-sent once, then cleared, and only the killed and \
             the paused worker tear checkpoints (runs: {pids:?})"
        );
        for earlier in &pids[..pids.len() - 1] {
            if *earlier == killed {
                after_kill += 1;
                continue;
            }
            let partition = InstanceId::new(instance).unwrap().partition(partitions);
            assert!(
                torn.contains(&partition),
                "{instance} (partition {partition}) task {task} ran again after a run in live \
                 process {earlier}: not after the killed process's run, and not a re-send of \
                 a checkpoint torn on the killed or paused worker's partitions {torn:?} \
                 (runs: {pids:?})"
            );
            after_torn += 1;
        }
    }
    eprintln!(
        "azure workers: {INSTANCES} instances, {total} activities; re-runs: {after_kill} of work \
         the killed process had in flight, {after_torn} re-sent by torn checkpoints"
    );
}
