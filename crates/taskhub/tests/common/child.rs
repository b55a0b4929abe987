//! Worker processes for the kill -9 and multi-worker tests: the test binary re-executes itself
//! with one ignored test as the entry point. Every activity run is logged as
//! `instance task pid`, so a test can tell which process ran what, and how often.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use taskhub::*;

/// The database directory a child opens.
pub const DB_VAR: &str = "TASKHUB_CHILD_DB";
/// The activity log a child appends to.
pub const LOG_VAR: &str = "TASKHUB_CHILD_LOG";

/// `Chain(base)`: `seq` activities in sequence, then `fan` in parallel; each returns 2 × input.
pub fn registry(log: PathBuf, seq: u64, fan: u64) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Work", move |ctx: ActivityContext, x: u64| {
        let log = log.clone();
        async move {
            // One write call per line: O_APPEND keeps concurrent lines whole.
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)?;
            let line = format!(
                "{} {} {}\n",
                ctx.instance_id(),
                ctx.task_id(),
                std::process::id()
            );
            f.write_all(line.as_bytes())?;
            tokio::time::sleep(Duration::from_millis(5 + x % 17)).await;
            Ok::<_, ActivityError>(x * 2)
        }
    });
    reg.orchestration(
        "Chain",
        move |ctx: OrchestrationContext, base: u64| async move {
            let mut sum = 0;
            for i in 0..seq {
                sum += ctx.call_activity::<_, u64>("Work", base + i).await?;
            }
            let fanned =
                when_all((0..fan).map(|i| ctx.call_activity::<_, u64>("Work", base + 100 + i)))
                    .await;
            for r in fanned {
                sum += r?;
            }
            Ok::<_, OrchestrationError>(sum)
        },
    );
    // `Family(base)`: `Chain(base)` as a sub-orchestration (its own instance, started by a
    // message from the parent: its first turn finds no row).
    reg.orchestration(
        "Family",
        move |ctx: OrchestrationContext, base: u64| async move {
            Ok::<_, OrchestrationError>(ctx.call_sub_orchestration::<_, u64>("Chain", base).await?)
        },
    );
    reg
}

/// The output of `Chain(base)` (and of `Family(base)`).
pub fn expected(base: u64, seq: u64, fan: u64) -> u64 {
    (0..seq).map(|i| (base + i) * 2).sum::<u64>()
        + (0..fan).map(|i| (base + 100 + i) * 2).sum::<u64>()
}

/// The child side: the database and log from the environment, if this process is a child.
pub fn child_env() -> Option<(PathBuf, PathBuf)> {
    Some((
        std::env::var(DB_VAR).ok()?.into(),
        std::env::var(LOG_VAR).ok()?.into(),
    ))
}

/// A worker process and the name it holds leases under.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

/// Starts the ignored test `entry` of this binary as a worker on `dir` and waits for the line
/// `ready NAME` it prints once its worker has started. Its stdin is a pipe: closing it is the
/// child's cue to shut down gracefully.
pub fn spawn(entry: &str, dir: &Path) -> Proc {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            entry,
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(DB_VAR, dir)
        .env(LOG_VAR, dir.join("activity.log"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(worker_log(dir))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let name = loop {
        let line = lines.next().expect("worker printed nothing").unwrap();
        // libtest prints "test <entry> ... " before the test's own output.
        if let Some((_, name)) = line.split_once("ready ") {
            break name.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Proc { child, name }
}

/// A new file `worker-N.log` in `dir` for a worker process's warnings (its stderr).
fn worker_log(dir: &Path) -> std::fs::File {
    (0..)
        .find_map(|n| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dir.join(format!("worker-{n}.log")))
                .ok()
        })
        .unwrap()
}

/// The warnings the worker process `pid` logged (its `worker-N.log`), for a failure message.
pub fn worker_warnings(dir: &Path, pid: u32) -> String {
    let marker = format!("pid {pid} ");
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("worker-") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        if text.lines().next().is_some_and(|l| l.starts_with(&marker)) {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            return tail.join("\n");
        }
    }
    format!("(no log of pid {pid})")
}

/// Sends this worker process's warnings to stderr (a file of the test's directory), after a
/// first line naming the process.
pub fn log_warnings() {
    eprintln!("pid {} ", std::process::id());
    // TASKHUB_TEST_LOG=debug (or info, trace) logs more, to chase a failure.
    let level = std::env::var("TASKHUB_TEST_LOG")
        .ok()
        .and_then(|l| l.parse().ok())
        .unwrap_or(tracing::Level::WARN);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Runs a worker with `registry` on the store in `db` until stdin closes, then shuts it down
/// gracefully. Prints `ready NAME` once started.
pub fn run_child(db: &Path, settings: Settings, registry: Registry) {
    log_warnings();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let hub = TaskHub::open(super::sqlite_store(db), settings)
            .await
            .unwrap();
        let worker = Worker::start(&hub, registry).await.unwrap();
        println!("ready {}", worker.name());
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await
        .unwrap();
        worker.shutdown().await;
    });
}

/// Activity runs logged so far (every run of every process, re-runs included).
pub fn logged_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("activity.log"))
        .map(|log| log.lines().count())
        .unwrap_or(0)
}

/// Waits until at least `at_least` activity runs are logged, and more than `since` (so the
/// process started last has made progress too), or until every one of the `total` activities
/// has run (then no more runs come: a fast run may finish before a later kill point). Kill
/// points of the multi-process tests are set by the work done, not by wall time, so they fall
/// mid-run however loaded the machine. Returns the count reached, or `None` once all the work
/// is done.
pub async fn wait_for_runs(
    dir: &Path,
    at_least: usize,
    since: usize,
    total: usize,
) -> Option<usize> {
    let all_done = || distinct_runs(dir) >= total;
    super::wait::until(
        &format!("{at_least} logged activity runs (and more than {since}), or all {total} run"),
        || {
            let n = logged_runs(dir);
            (n >= at_least && n > since) || all_done()
        },
        || (logged_runs(dir), distinct_runs(dir)),
    )
    .await;
    if all_done() {
        None
    } else {
        Some(logged_runs(dir))
    }
}

/// Distinct activities (instance, task) that have run at least once.
pub fn distinct_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("activity.log"))
        .map(|log| {
            log.lines()
                .filter_map(|l| {
                    let mut parts = l.split(' ');
                    Some((parts.next()?, parts.next()?))
                })
                .collect::<std::collections::HashSet<_>>()
                .len()
        })
        .unwrap_or(0)
}

/// Activity runs from the log: (instance, task) → the processes that ran it, in order.
pub fn activity_runs(dir: &Path) -> HashMap<(String, String), Vec<u32>> {
    let log = std::fs::read_to_string(dir.join("activity.log")).unwrap();
    let mut runs: HashMap<(String, String), Vec<u32>> = HashMap::new();
    for line in log.lines() {
        let mut parts = line.split(' ');
        let (Some(instance), Some(task), Some(pid)) = (parts.next(), parts.next(), parts.next())
        else {
            panic!("malformed log line {line:?}");
        };
        runs.entry((instance.to_owned(), task.to_owned()))
            .or_default()
            .push(pid.parse().unwrap());
    }
    runs
}

/// How often each task's `TaskScheduled` and `TaskCompleted` appear in `history`, keyed by
/// (event kind, task ID): the multi-process tests check that every task was scheduled and
/// completed exactly once.
pub fn task_event_counts(
    history: &[taskhub::HistoryEvent],
) -> HashMap<(std::mem::Discriminant<taskhub::EventKind>, u64), usize> {
    let mut seen = HashMap::new();
    for e in history {
        if let taskhub::EventKind::TaskScheduled { task_id, .. }
        | taskhub::EventKind::TaskCompleted { task_id, .. } = &e.event
        {
            *seen
                .entry((std::mem::discriminant(&e.event), *task_id))
                .or_insert(0) += 1;
        }
    }
    seen
}

/// Short leases and visibility timeouts: what a killed worker process held comes back in
/// seconds.
pub fn failover_settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        work_item_visibility_timeout: Duration::from_secs(3),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        ..super::fast_settings()
    }
}

/// Starts the chains `from..to` (`Chain` on `i * 1000` for each `i`); returns each instance
/// with its base.
pub async fn start_chains(client: &TaskHubClient, from: u64, to: u64) -> Vec<(InstanceId, u64)> {
    let mut out = Vec::new();
    for i in from..to {
        out.push((client.start("Chain", i * 1000).await.unwrap(), i * 1000));
    }
    out
}

/// Every instance row (the tests stay under one page).
pub async fn instance_rows(hub: &TaskHub) -> Vec<InstanceRow> {
    hub.store()
        .list_instances(&InstanceQuery {
            page_size: 1000,
            ..InstanceQuery::default()
        })
        .await
        .unwrap()
        .instances
}
