//! Worker processes sharing one task hub, one test per scenario and backend, killed with
//! SIGKILL or paused with SIGSTOP while orchestrations run. Every instance completes with the
//! right output, its history is clean (each task scheduled and completed exactly once), every
//! activity ran, and an activity ran again only where the store's commit allows it:
//!
//! - `azure::three_workers_survive_a_kill_and_a_pause_past_the_lease` (a store without
//!   transactions): one worker is killed mid-run, one is paused until the others have taken
//!   its partitions (past its lease) and then resumed with SIGCONT. An activity runs more than
//!   once only if an earlier run was in the killed process, or its instance is on a partition
//!   the killed or paused worker held (a checkpoint torn between its enqueue and the clearing
//!   of its pending outbox is re-sent by the instance's next loader, once: the loader clears
//!   it). The pause is shorter than the work items' visibility timeout, so the paused worker's
//!   running activities are not handed to anyone else.
//! - `postgres::three_workers_killed_in_turn_over_a_thousand_orchestrations_lose_nothing` (a
//!   store whose checkpoints are transactions): three are killed in turn (a fresh one started
//!   after each kill) while 1,000 orchestrations run; an activity ran again only after a run in
//!   a killed process: no torn checkpoint is ever re-sent and a lease move between live
//!   workers never re-runs anything. (SQLite's multi-process tests: `kill9.rs`,
//!   `multi_worker.rs`.)
//!
//! The test re-executes its own binary as the worker processes (`*_worker_process`, ignored
//! unless started by this test; the backend and hub are in the file `backends::HUB_FILE` of the
//! test's dir). Run with the services up: `scripts/with-azurite.sh scripts/with-postgres.sh
//! cargo test -p taskhub --test workers`.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/worker_procs.rs"]
mod worker_procs;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use backends::Backend;
use common::*;
use taskhub::*;
use worker_procs::{
    check_completed, check_instances, fresh_hub, logged_runs, owners, signal, start_all,
    stop_gracefully, until_runs, FAN, SEQ,
};

taskhub_test_support::backend_matrix!(
    [in kill_and_pause]
    three_workers_survive_a_kill_and_a_pause_past_the_lease
);
taskhub_test_support::backend_matrix!(
    [in three_kills]
    three_workers_killed_in_turn_over_a_thousand_orchestrations_lose_nothing
);

const KILL_PAUSE_INSTANCES: u64 = 150;
/// How long any one wait of the kill-and-pause scenario may take.
const KILL_PAUSE_BOUND: Duration = Duration::from_secs(120);
const THREE_KILLS_INSTANCES: u64 = 1_000;

fn kill_pause_settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        // Longer than the pause below, shorter than the test: the paused worker keeps its
        // activities; the killed worker's come back after this.
        work_item_visibility_timeout: Duration::from_secs(15),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        ..backends::settings(Backend::Azure)
    }
}

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn kill_pause_worker_process() {
    if let Some((dir, log)) = child::child_env() {
        let registry = child::registry(log, SEQ, FAN);
        backends::run_child(Backend::Azure, &dir, kill_pause_settings(), registry);
    }
}

#[test]
#[ignore = "entry point of the worker processes started by the tests of this file"]
fn three_kills_worker_process() {
    if let Some((dir, log)) = child::child_env() {
        let registry = child::registry(log, SEQ, FAN);
        backends::run_child(Backend::Postgres, &dir, worker_procs::settings(), registry);
    }
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

/// Three workers; one killed mid-run, one paused past its lease (see the file's comment).
async fn three_workers_survive_a_kill_and_a_pause_past_the_lease(backend: Backend) {
    let (dir, hub) = fresh_hub(backend, "workers-kill-pause", kill_pause_settings()).await;
    let client = hub.client();
    let ids = start_all(&hub, "Chain", KILL_PAUSE_INSTANCES).await;
    let mut workers: Vec<child::Proc> = (0..3)
        .map(|_| child::spawn("kill_pause_worker_process", &dir.0))
        .collect();
    let names: Vec<String> = workers.iter().map(|w| w.name.clone()).collect();
    until_owners(&hub, "every worker to hold a partition", |o| {
        names
            .iter()
            .all(|n| o.values().any(|v| v.as_deref() == Some(n.as_str())))
    })
    .await;
    let total = usize::try_from(KILL_PAUSE_INSTANCES * (SEQ + FAN)).unwrap();
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
        paused_for < kill_pause_settings().work_item_visibility_timeout,
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
        let s = match client.wait_for_completion(id, KILL_PAUSE_BOUND).await {
            Ok(s) => s,
            Err(e) => panic!("{e}: {}", diagnose(&hub, id).await),
        };
        check_completed(&client, id, *base, &s).await;
    }
    // The resumed worker gets partitions back (it is live again): every partition is held
    // by one of the two running workers.
    let running: BTreeSet<String> = workers[1..].iter().map(|w| w.name.clone()).collect();
    until_owners(&hub, "the partitions held by running workers", |o| {
        o.values()
            .all(|v| v.as_ref().is_some_and(|v| running.contains(v)))
    })
    .await;
    stop_gracefully(&mut workers[1..]);

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
        "{backend} workers: {KILL_PAUSE_INSTANCES} instances, {total} activities; re-runs: {after_kill} of work \
         the killed process had in flight, {after_torn} re-sent by torn checkpoints"
    );
}

/// Three workers killed in turn over a thousand orchestrations (see the file's comment).
async fn three_workers_killed_in_turn_over_a_thousand_orchestrations_lose_nothing(
    backend: Backend,
) {
    let (dir, hub) = fresh_hub(backend, "workers-three-kills", worker_procs::settings()).await;
    let ids = start_all(&hub, "Chain", THREE_KILLS_INSTANCES).await;
    let mut workers: Vec<child::Proc> = (0..3)
        .map(|_| child::spawn("three_kills_worker_process", &dir.0))
        .collect();
    let total = usize::try_from(THREE_KILLS_INSTANCES * (SEQ + FAN)).unwrap();
    let began = Instant::now();
    let mut killed = BTreeSet::new();
    for round in 1..=3 {
        until_runs(&dir.0, total * round / 5).await;
        // The oldest worker goes (each of the first three in turn); a fresh one joins.
        let mut victim = workers.remove(0);
        killed.insert(victim.child.id());
        victim.child.kill().unwrap(); // SIGKILL
        victim.child.wait().unwrap();
        eprintln!(
            "{:?}: killed {} (pid {}) after {} runs",
            began.elapsed(),
            victim.name,
            victim.child.id(),
            logged_runs(&dir.0)
        );
        workers.push(child::spawn("three_kills_worker_process", &dir.0));
    }
    check_instances(&hub, &ids).await;
    eprintln!(
        "{:?}: all {THREE_KILLS_INSTANCES} instances completed",
        began.elapsed()
    );
    stop_gracefully(&mut workers);
    let runs = child::activity_runs(&dir.0);
    assert_eq!(runs.len(), total, "every activity ran");
    let mut again = 0;
    for ((instance, task), pids) in &runs {
        for earlier in &pids[..pids.len() - 1] {
            assert!(
                killed.contains(earlier),
                "{instance} task {task} ran again after a run in live process {earlier} \
                 (runs: {pids:?}; killed: {killed:?})"
            );
            again += 1;
        }
    }
    eprintln!(
        "{backend} workers: {THREE_KILLS_INSTANCES} instances, {total} activities, {again} re-runs of work \
         the killed processes had in flight"
    );
}
