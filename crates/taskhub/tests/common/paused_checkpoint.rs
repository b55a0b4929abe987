//! The paused-checkpoint test, one body for every backend with real worker processes
//! (`paused_checkpoint.rs` runs it on each): a worker process paused
//! (SIGSTOP) in the middle of a checkpoint, at each step of the checkpoint in turn, until its
//! lease has moved to another worker process, then resumed (SIGCONT). It must not leave
//! duplicated or lost history, lost messages, or an instance that never finishes.
//!
//! The pause is made by the shared checkpoint driver's step hook: the victim's store is wrapped
//! in `FaultyStore` with a step observer that, at step N of its k-th orchestration checkpoint,
//! writes a marker file and stops its own process. The parent waits for the marker and the
//! stopped state, waits until the other worker holds every partition, resumes the victim, and
//! checks every instance: completed, the right output, each task scheduled and completed
//! exactly once in history, and no activity run more than twice (a checkpoint torn after its
//! enqueue is re-sent by the next loader once, then its outbox is cleared).
//!
//! The test binary re-executes itself as the worker processes (its `paused_checkpoint_process`,
//! ignored unless started by its tests, calls [`child_process`]); the backend and hub are in
//! the file `backends::HUB_FILE` of the test's directory.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backends::{self, Backend};
use crate::common::*;
use crate::worker_procs::{
    check_completed, check_linear, fresh_hub, owners, signal, start_all, stop_gracefully,
};
use taskhub::*;
use taskhub_storage::faults::FaultPlan;
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStep, StepObserver, StorageResult, SystemClock,
};

fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        // Longer than the pause (the lease interval; on PostgreSQL plus up to the server's
        // 5 s idle transaction timeout): the paused worker's running activities are not
        // handed to anyone else, so every second run comes from a re-sent outbox.
        work_item_visibility_timeout: Duration::from_secs(20),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        ..backends::settings(Backend::Azure)
    }
}

const SEQ: u64 = 3;
const FAN: u64 = 2;
const INSTANCES: u64 = 12;
/// The victim pauses in its k-th checkpoint that carries a fence and history.
const NTH_CHECKPOINT: u64 = 4;
/// How long any one wait of this test may take.
const BOUND: Duration = Duration::from_secs(120);
/// The file that tells a starting child where to pause ("step-index nth").
const PAUSE_FILE: &str = "pause-at";
/// The file a paused child writes just before it stops itself.
const PAUSED_FILE: &str = "paused";

/// Stops this process at `step` of its `nth` checkpoint with a fence and history.
struct PauseAt {
    step: CheckpointStep,
    nth: u64,
    dir: PathBuf,
    seen: AtomicU64,
    target: Mutex<Option<InstanceId>>,
    done: AtomicBool,
    /// Set once the process has said it is ready: the worker's first checkpoints can come
    /// within milliseconds of its start (PostgreSQL), and a process stopped before its `ready`
    /// line would leave the test waiting for that line.
    armed: AtomicBool,
}

impl StepObserver for PauseAt {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        if !self.armed.load(Ordering::SeqCst)
            || self.done.load(Ordering::SeqCst)
            || request.fence.is_none()
        {
            return Ok(());
        }
        // `nth` 0: the first turn of a sub-orchestration (a `Chain` started by a `Family`).
        let first_child_turn = request.history.as_ref().is_some_and(|h| h.new_execution)
            && request
                .instance
                .as_ref()
                .is_some_and(|(row, _)| row.name == "Chain");
        let chosen = || {
            if self.nth == 0 {
                first_child_turn
            } else {
                request.history.is_some()
                    && self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.nth
            }
        };
        if step == CheckpointStep::Validated && chosen() {
            *self.target.lock().unwrap() = Some(request.instance_id.clone());
        }
        let ours = self.target.lock().unwrap().as_ref() == Some(&request.instance_id);
        if ours && step == self.step && !self.done.swap(true, Ordering::SeqCst) {
            let partition = request.fence.map_or(0, |f| f.partition);
            std::fs::write(
                self.dir.join(PAUSED_FILE),
                format!("{} {partition} {step:?}", request.instance_id),
            )
            .unwrap();
            // Stops every thread of this process until SIGCONT.
            let stopped = Command::new("kill")
                .args(["-STOP", &std::process::id().to_string()])
                .status()
                .unwrap();
            assert!(stopped.success());
        }
        Ok(())
    }
}

/// The worker process: waits for its stdin to close, pausing itself as its directory says.
pub fn child_process() {
    let Some((dir, log)) = child::child_env() else {
        return;
    };
    let (backend, hub_name) = backends::read_hub_file(&dir, Backend::Azure);
    let pause = std::fs::read_to_string(dir.join(PAUSE_FILE))
        .ok()
        .map(|text| {
            let mut parts = text.split_whitespace();
            let step = parts.next().unwrap().parse().unwrap();
            let nth = parts.next().unwrap().parse().unwrap();
            Arc::new(PauseAt {
                step: CheckpointStep::from_index(step).unwrap(),
                nth,
                dir: dir.clone(),
                seen: AtomicU64::new(0),
                target: Mutex::new(None),
                done: AtomicBool::new(false),
                armed: AtomicBool::new(false),
            })
        });
    backends::runtime().block_on(async move {
        let inner = backends::open_hub_store(backend, &dir, &hub_name)
            .await
            .store;
        let mut store = FaultyStore::new(inner, Arc::new(SystemClock::new()), FaultPlan::none());
        if let Some(pause) = &pause {
            store = store.observe_steps(pause.clone());
        }
        let hub = TaskHub::open(Arc::new(store), settings()).await.unwrap();
        let worker = Worker::start(&hub, child::registry(log, SEQ, FAN))
            .await
            .unwrap();
        println!("ready {}", worker.name());
        if let Some(pause) = &pause {
            pause.armed.store(true, Ordering::SeqCst);
        }
        backends::until_stdin_closes().await;
        worker.shutdown().await;
    });
}

/// True once the process is stopped (state `T` in /proc).
fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(") ")?.1;
            after.chars().next()
        })
        .is_some_and(|state| state == 'T' || state == 't')
}

/// What a stuck instance looks like in storage (for the failure message): its row's status and
/// its history's event kinds, with task IDs.
async fn stuck_state(hub: &TaskHub, id: &InstanceId) -> String {
    let row = hub.store().get_instance(id).await;
    let history = hub.store().load_history(id).await;
    let kinds = history.as_ref().ok().and_then(Option::as_ref).map(|h| {
        h.events
            .iter()
            .map(|e| e.event.type_name())
            .collect::<Vec<_>>()
            .join(",")
    });
    format!(
        "row: {:?}; history: {kinds:?}; pending outbox: {:?}",
        row.map(|r| r.map(|r| r.status)),
        history.map(|h| h.map(|h| h.pending_outbox.len()))
    )
}

/// One run: the victim pauses after `step`; returns a line for the report.
async fn pause_at(backend: Backend, step: CheckpointStep) -> String {
    let (dir, hub) = fresh_hub(backend, "paused-checkpoint", settings()).await;
    let client = hub.client();
    let ids = start_all(&hub, "Chain", INSTANCES).await;
    std::fs::write(
        dir.0.join(PAUSE_FILE),
        format!("{} {NTH_CHECKPOINT}", step.index()),
    )
    .unwrap();
    let mut victim = child::spawn("paused_checkpoint_process", &dir.0);
    std::fs::remove_file(dir.0.join(PAUSE_FILE)).unwrap();
    let mut other = child::spawn("paused_checkpoint_process", &dir.0);

    let pid = victim.child.id();
    let paused_file = dir.0.join(PAUSED_FILE);
    wait::until(
        &format!("the victim to stop itself after {step:?}"),
        || paused_file.exists() && is_stopped(pid),
        || (),
    )
    .await;
    let paused = std::fs::read_to_string(&paused_file).unwrap();
    let pause = Instant::now();
    let survivor = other.name.clone();
    let start = Instant::now();
    loop {
        let o = owners(&hub).await;
        if o.values().all(|v| v.as_deref() == Some(survivor.as_str())) {
            break;
        }
        assert!(
            start.elapsed() < BOUND,
            "the other worker never took every partition: {o:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let paused_for = pause.elapsed();
    signal(&victim, "-CONT");
    assert!(
        paused_for < settings().work_item_visibility_timeout,
        "the pause ({paused_for:?}) must stay under the work-item visibility timeout"
    );

    eprintln!("{step:?}: checking every instance");
    for (id, base) in &ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => panic!(
                "{step:?}: {id} never finished: {e}; {}",
                stuck_state(&hub, id).await
            ),
        };
        // One linear chain: a late commit in the fence window never forks the history.
        check_linear(&check_completed(&client, id, *base, &s).await, id);
        assert!(
            hub.store()
                .load_history(id)
                .await
                .unwrap()
                .unwrap()
                .pending_outbox
                .is_empty(),
            "{step:?}: {id}: an outbox left pending"
        );
    }
    let letters = hub.store().list_dead_letters(None, 10).await.unwrap();
    assert!(
        letters.is_empty(),
        "{step:?}: messages were dead-lettered: {letters:?}"
    );
    stop_gracefully([&mut victim, &mut other]);
    let runs = child::activity_runs(&dir.0);
    assert_eq!(
        runs.len(),
        usize::try_from(INSTANCES * (SEQ + FAN)).unwrap(),
        "{step:?}: every activity ran"
    );
    let twice = runs.values().filter(|pids| pids.len() == 2).count();
    let over = runs
        .iter()
        .filter(|(_, pids)| pids.len() > 2)
        .collect::<Vec<_>>();
    assert!(
        over.is_empty(),
        "{step:?}: activities ran more than twice (a torn outbox re-sent more than once): \
         {over:?}"
    );
    format!("{step:?}: paused in '{paused}' for {paused_for:?}; {twice} activities ran twice")
}

/// Issue 20, item 2: the victim pauses right after the history commit of a sub-orchestration's
/// first turn (a turn that found no instance row), the other worker takes its partitions and
/// runs every parent and child to completion, then the victim resumes and finishes that
/// checkpoint. Its row write must not turn the child's Completed row back to Running: every
/// row is read after both workers have shut down.
pub async fn a_writer_resumed_in_a_childs_first_turn_never_overwrites_the_newer_row(
    backend: Backend,
) {
    let (dir, hub) = fresh_hub(backend, "paused-child", settings()).await;
    let client = hub.client();
    let ids = start_all(&hub, "Family", INSTANCES).await;
    let step = CheckpointStep::HistoryCommitted;
    std::fs::write(dir.0.join(PAUSE_FILE), format!("{} 0", step.index())).unwrap();
    let mut victim = child::spawn("paused_checkpoint_process", &dir.0);
    std::fs::remove_file(dir.0.join(PAUSE_FILE)).unwrap();
    let mut other = child::spawn("paused_checkpoint_process", &dir.0);
    let pid = victim.child.id();
    let paused_file = dir.0.join(PAUSED_FILE);
    wait::until(
        "the victim to stop itself in a child's first turn",
        || paused_file.exists() && is_stopped(pid),
        || (),
    )
    .await;
    let paused = std::fs::read_to_string(&paused_file).unwrap();
    let child_id = paused.split_whitespace().next().unwrap().to_owned();
    // The other worker finishes everything, the paused child included, while the victim waits.
    for (id, base) in &ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => panic!("{id} never finished while the victim was paused: {e}"),
        };
        assert_eq!(s.status(), OrchestrationStatus::Completed, "{id}");
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(child::expected(*base, SEQ, FAN))
        );
    }
    signal(&victim, "-CONT");
    stop_gracefully([&mut victim, &mut other]);
    let rows = hub
        .store()
        .list_instances(&taskhub_storage::InstanceQuery {
            page_size: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .instances;
    assert_eq!(
        rows.len(),
        usize::try_from(2 * INSTANCES).unwrap(),
        "{rows:?}"
    );
    for row in &rows {
        assert_eq!(
            row.status,
            OrchestrationStatus::Completed,
            "row of {} (the victim paused in '{paused}', child {child_id}) after both workers \
             stopped",
            row.instance_id
        );
    }
}

/// The victim pauses at each step in turn (a fresh hub and fresh processes for each).
pub async fn a_worker_paused_at_each_step_of_a_checkpoint_past_its_lease_loses_nothing(
    backend: Backend,
) {
    let mut report = Vec::new();
    for step in CheckpointStep::ALL {
        report.push(pause_at(backend, step).await);
        eprintln!("{}", report.last().unwrap());
    }
    eprintln!("paused checkpoints:\n{}", report.join("\n"));
}
