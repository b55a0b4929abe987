//! `taskhub demo`: sample workloads on a fresh task hub (SQLite, or Azure Storage with
//! `--backend azure`) with one in-process worker.
//!
//! It deletes the `--db` file (and its `-wal`/`-shm`), or the Azure hub's objects, starts every [`scenarios`] instance,
//! shows a progress bar on stderr, then prints a table and the throughput on stdout and checks
//! every result. Any instance that does not finish as expected makes the demo exit non-zero.

// The demo measures and paces a real run (throughput, latency, a wall-clock budget): real
// time, not a hub's clock. Its outcomes are indexed by the position of their scenario, which
// the demo assigns itself.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "the demo measures a real run; outcome indexes are scenario positions"
)]

mod cluster;
mod report;
mod scenarios;
pub mod workloads;

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use taskhub::{
    InstanceId, InstanceQuery, InstanceStatus, StartOptions, TaskHubClient, TaskhubError, Worker,
};
use taskhub_backends::{BackendError, OpenMode};
use tokio::task::JoinSet;

use crate::args::{DemoArgs, GlobalArgs};
use crate::settings;
use report::Outcome;

/// The demo's defaults for settings the user did not set: poll an idle queue at least every
/// 100 ms (durable timers fire on time) and do not wait long at shutdown.
/// On Azure it uses a local Azurite on its default ports unless told otherwise.
pub const PROFILE: [(&str, &str); 3] = [
    ("max_queue_polling_interval", "100ms"),
    ("shutdown_timeout", "5s"),
    (
        "azure.storage_connection_string",
        "UseDevelopmentStorage=true",
    ),
];

/// Where the demo's work runs.
enum Workers {
    /// One worker in this process.
    InProcess(taskhub::WorkerHandle),
    /// Worker processes on the same file.
    Processes(cluster::Cluster),
}

/// Runs the demo.
pub async fn run(global: &GlobalArgs, args: &DemoArgs) -> anyhow::Result<()> {
    if !(1..=16).contains(&args.workers) {
        bail!("--workers must be 1 to 16, got {}", args.workers);
    }
    let mut profile: Vec<(&str, &str)> = PROFILE.to_vec();
    if args.workers > 1 {
        profile.extend(cluster::PROFILE);
    }
    let mut with_db = profile.clone();
    with_db.push(settings::DEMO_DB_PROFILE);
    let resolved = settings::resolve(global, &with_db)?;
    fresh_hub(&resolved, args.fresh).await?;
    let hub = resolved.open_hub(false).await?;
    let db = resolved.db.clone();
    let mut workers = if args.workers > 1 {
        let mut c = tokio::task::block_in_place(|| {
            cluster::Cluster::start(args.workers, &db, global, &profile)
        })?;
        // Let the workers share the partitions before any work arrives.
        let deadline = Instant::now() + Duration::from_secs(15);
        while !c.balanced() && Instant::now() < deadline {
            c.watch(&hub).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for line in &c.events {
            eprintln!("{line}");
        }
        Workers::Processes(c)
    } else {
        Workers::InProcess(
            Worker::start(&hub, workloads::registry())
                .await
                .context("cannot start the worker")?,
        )
    };
    let client = hub.client();
    let scenarios = scenarios::all(args.fan_out);
    let timeout = Duration::from_secs(args.timeout_secs);

    let started = Instant::now();
    let mut waits = JoinSet::new();
    let mut raises = JoinSet::new();
    for (index, s) in scenarios.iter().enumerate() {
        let id = InstanceId::new(s.id)?;
        let options = StartOptions {
            instance_id: Some(id.clone()),
            ..StartOptions::default()
        };
        client
            .start_with(s.orchestration, &s.input, options)
            .await
            .with_context(|| format!("cannot start {}", s.id))?;
        let begun = Instant::now();
        let waiter = client.clone();
        let wait_id = id.clone();
        waits.spawn(async move {
            let result = waiter.wait_for_completion(&wait_id, timeout).await;
            (index, result, begun.elapsed())
        });
        if let Some(raise) = &s.raise {
            let raiser = client.clone();
            let (name, data, after) = (raise.name, raise.data.clone(), raise.after);
            raises.spawn(async move {
                tokio::time::sleep(after).await;
                raiser
                    .raise_event(&id, name, &data)
                    .await
                    .with_context(|| format!("cannot raise '{name}' on {id}"))
            });
        }
    }

    let progress = progress_bar(scenarios.len());
    let mut outcomes: Vec<Option<Outcome>> = scenarios.iter().map(|_| None).collect();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut script = cluster_script();
    while !waits.is_empty() {
        tokio::select! {
            joined = waits.join_next() => {
                if let Some(joined) = joined {
                    let (index, result, took) = joined.context("a waiting task panicked")?;
                    outcomes[index] = Some(outcome(&client, index, &scenarios[index], result, took, timeout).await);
                    progress.inc(1);
                }
            }
            _ = tick.tick() => match &mut workers {
                Workers::InProcess(worker) => {
                    progress.set_message(format!("{} activities run", worker.stats().activities));
                }
                Workers::Processes(c) => {
                    step_script(&mut script, c, started.elapsed())?;
                    if let Some(line) = c.watch(&hub).await {
                        progress.println(line);
                    }
                    progress.set_message(format!("{} worker processes", c.running()));
                }
            }
        }
    }
    let elapsed = started.elapsed();
    progress.finish_and_clear();
    while let Some(raised) = raises.join_next().await {
        raised.context("a task raising an event panicked")??;
    }
    let finished = count_finished(&client).await?;
    let throughput = match workers {
        Workers::InProcess(worker) => {
            let stats = worker.stats();
            worker.shutdown().await;
            report::throughput(elapsed, stats.activities, finished, stats.turns)
        }
        Workers::Processes(mut c) => {
            tokio::task::block_in_place(|| c.shutdown())?;
            let activities = count_activities(&client).await?;
            crate::outln!("Worker processes and partition ownership:");
            for line in &c.events {
                crate::outln!("  {line}");
            }
            report::throughput_processes(elapsed, activities, finished, args.workers)
        }
    };

    let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
    crate::outln!("{}", report::table(&scenarios, &outcomes));
    crate::outln!("{throughput}");
    if let Some(o) = outcomes
        .iter()
        .find(|o| scenarios[o.index].orchestration == "FanOutFanIn" && o.problem.is_none())
    {
        crate::outln!("{}", report::fan_out(u64::from(args.fan_out), o.took));
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.problem.is_some()).collect();
    if !failed.is_empty() {
        for o in &failed {
            eprintln!(
                "FAILED {}: {}",
                scenarios[o.index].id,
                o.problem.as_deref().unwrap_or_default()
            );
        }
        bail!(
            "{} of {} demo instances did not finish as expected",
            failed.len(),
            scenarios.len()
        );
    }
    crate::outln!(
        "All {} demo instances finished as expected.",
        scenarios.len()
    );
    Ok(())
}

/// Starts the demo on a fresh hub: deletes it (its file and WAL files, or its queues, tables
/// and blobs), saying so. A hub that is not on this machine (a real storage account, not an
/// emulator) and has instances is deleted only with `allow_real` (the demo's `--fresh`): the
/// demo must never wipe a user's hub by surprise.
async fn fresh_hub(resolved: &settings::Resolved, allow_real: bool) -> anyhow::Result<()> {
    let hub = &resolved.hub;
    if !hub.is_local() && !allow_real {
        match hub.open(OpenMode::Existing, false).await {
            Ok(opened) => {
                let page = opened
                    .store
                    .list_instances(&InstanceQuery {
                        page_size: 1,
                        include_entities: true,
                        ..InstanceQuery::default()
                    })
                    .await?;
                if !page.instances.is_empty() {
                    bail!(
                        "the demo starts on a fresh hub and would delete {}, which has \
                         instances: name another hub (task_hub_name), or pass --fresh to delete it",
                        hub.describe()
                    );
                }
            }
            Err(BackendError::NotFound { .. }) => {}
            Err(e) => return Err(resolved.open_error(e)),
        }
    }
    let deleted = hub.delete().await.map_err(|e| resolved.open_error(e))?;
    if deleted.existed {
        crate::outln!(
            "Demo task hub: {} (started fresh: {})",
            hub.place(),
            deleted.note
        );
    } else {
        crate::outln!("Demo task hub: {} ({})", hub.place(), deleted.note);
    }
    Ok(())
}

fn progress_bar(total: usize) -> ProgressBar {
    let bar = ProgressBar::new(u64::try_from(total).unwrap_or(u64::MAX));
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} instances finished  {msg}",
    ) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// The outcome of one instance: its status row and whether it passed its check.
async fn outcome(
    client: &TaskHubClient,
    index: usize,
    scenario: &scenarios::Scenario,
    result: Result<InstanceStatus, TaskhubError>,
    took: Duration,
    timeout: Duration,
) -> Outcome {
    let (row, problem) = match result {
        Ok(status) => {
            let problem = (scenario.check)(&status.row).err();
            (Some(status.row), problem)
        }
        Err(TaskhubError::Timeout(..)) => {
            let id = InstanceId::new(scenario.id).ok();
            let row = match id {
                Some(id) => client
                    .get_status(&id, taskhub::StatusOptions::default())
                    .await
                    .ok()
                    .flatten()
                    .map(|s| s.row),
                None => None,
            };
            let status = row
                .as_ref()
                .map_or_else(|| "missing".to_owned(), |r| r.status.to_string());
            (
                row,
                Some(format!(
                    "did not finish within {timeout:?} (status {status})"
                )),
            )
        }
        Err(e) => (None, Some(format!("cannot wait for it: {e}"))),
    };
    Outcome {
        index,
        row,
        took,
        problem,
    }
}

/// What happens to the worker processes, and when (after the workloads start).
#[derive(Debug, Clone, Copy)]
enum Step {
    Kill,
    Stop,
    Add,
}

fn cluster_script() -> Vec<(Duration, Step)> {
    vec![
        (Duration::from_millis(300), Step::Kill),
        (Duration::from_millis(700), Step::Stop),
        (Duration::from_millis(900), Step::Add),
    ]
}

fn step_script(
    script: &mut Vec<(Duration, Step)>,
    c: &mut cluster::Cluster,
    elapsed: Duration,
) -> anyhow::Result<()> {
    while script.first().is_some_and(|(at, _)| *at <= elapsed) {
        let (_, step) = script.remove(0);
        // Keep at least one worker running, or nothing could finish.
        tokio::task::block_in_place(|| match step {
            Step::Kill if c.running() > 1 => c.kill_one(),
            Step::Stop if c.running() > 1 => c.stop_one(),
            Step::Add => c.add(),
            Step::Kill | Step::Stop => Ok(()),
        })?;
    }
    Ok(())
}

/// Every instance row in the hub, page by page.
async fn all_rows(client: &TaskHubClient) -> anyhow::Result<Vec<taskhub::InstanceRow>> {
    let mut query = InstanceQuery {
        page_size: 1000,
        ..InstanceQuery::default()
    };
    let mut rows = Vec::new();
    loop {
        let page = client.list(&query).await?;
        rows.extend(page.instances);
        match page.continuation {
            Some(c) => query.continuation = Some(c),
            None => return Ok(rows),
        }
    }
}

/// Activities that finished, from every instance's history (the workers are other processes).
async fn count_activities(client: &TaskHubClient) -> anyhow::Result<u64> {
    let mut n = 0;
    for row in all_rows(client).await? {
        let status = client
            .get_status(&row.instance_id, taskhub::StatusOptions { history: true })
            .await?;
        n += status.and_then(|s| s.history).map_or(0, |h| {
            h.iter()
                .filter(|e| {
                    matches!(
                        e.event,
                        taskhub::EventKind::TaskCompleted { .. }
                            | taskhub::EventKind::TaskFailed { .. }
                    )
                })
                .count() as u64
        });
    }
    Ok(n)
}

/// Every finished instance in the hub (the demo's and their sub-orchestrations).
async fn count_finished(client: &TaskHubClient) -> anyhow::Result<u64> {
    Ok(all_rows(client)
        .await?
        .iter()
        .filter(|r| r.status.is_terminal())
        .count() as u64)
}
