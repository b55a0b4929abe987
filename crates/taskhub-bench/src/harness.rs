//! One benchmark run's task hub: a fresh store of any registered backend
//! (`taskhub_backends`, counted by `Instrumented`), a hub, its workers and a client, plus
//! helpers to start and await many instances.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde::Serialize;
use taskhub::{
    InstanceId, InstanceStatus, OrchestrationStatus, Registry, Settings, StartOptions, TaskHub,
    TaskHubClient, Worker, WorkerHandle,
};
use taskhub_azure::{AzureStore, OpCounts};
use taskhub_backends::{BackendConfig, HubLocation, OpenMode, OpenedStore, OptionValue};
use taskhub_sqlite::SqliteStore;
use taskhub_storage::{StoreMetrics, TaskHubStore};
use tokio::task::JoinSet;

use crate::args::{Args, DurabilityArg};

/// How many client tasks start instances at once (so starts group-commit).
const STARTERS: usize = 32;

/// What every scenario run shares: backend, durability, scale and setting overrides.
#[derive(Debug, Clone)]
pub struct Config {
    /// The backend's name.
    pub backend: &'static str,
    /// SQLite durability.
    pub durability: DurabilityArg,
    /// Multiplier of counts and durations.
    pub scale: f64,
    /// `--set` overrides, in order.
    pub overrides: Vec<(String, String)>,
    /// Where temporary databases go.
    pub dir: PathBuf,
    /// Workers on the hub (they share its partitions through leases).
    pub workers: usize,
    /// `idle-ops`: how long the empty hub is watched.
    pub idle_window: Duration,
    /// `pickup`: time between two starts.
    pub pickup_gap: Duration,
    /// `idle-ops`: queue sampling as with the dashboard on.
    pub queue_sampling: crate::args::QueueSamplingArg,
    /// Worker processes (0: the workers run in this process).
    pub worker_processes: usize,
}

impl Config {
    /// Validates the arguments.
    pub fn from_args(args: &Args) -> anyhow::Result<Self> {
        if !(1..=16).contains(&args.workers) {
            bail!("--workers must be 1 to 16, got {}", args.workers);
        }
        if !(args.scale > 0.0 && args.scale.is_finite()) {
            bail!("--scale must be a positive number");
        }
        let mut overrides = Vec::new();
        for pair in &args.set {
            let Some((k, v)) = pair.split_once('=') else {
                bail!("--set expects NAME=VALUE, got {pair:?}");
            };
            overrides.push((k.trim().to_owned(), v.trim().to_owned()));
        }
        let config = Self {
            backend: args.backend,
            durability: args.durability,
            scale: args.scale,
            overrides,
            dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
            workers: args.workers,
            idle_window: positive_secs(args.idle_window, "--idle-window")?,
            pickup_gap: positive_secs(args.pickup_gap, "--pickup-gap")?,
            queue_sampling: args.queue_sampling,
            worker_processes: args.worker_processes,
        };
        config.settings(&[])?;
        Ok(config)
    }

    /// `n` scaled (at least 1).
    pub fn count(&self, n: u64) -> u64 {
        ((n as f64 * self.scale).round() as u64).max(1)
    }

    /// `d` scaled (at least 1 ms).
    pub fn time(&self, d: Duration) -> Duration {
        d.mul_f64(self.scale).max(Duration::from_millis(1))
    }

    /// The runtime settings: defaults, then the scenario's own `extra`, then `--set` (but its
    /// backend options).
    pub fn settings(&self, extra: &[(&str, &str)]) -> anyhow::Result<Settings> {
        let mut s = Settings {
            shutdown_timeout: Duration::from_secs(5),
            ..Settings::default()
        };
        for (k, v) in extra {
            s.set(k, v)
                .with_context(|| format!("scenario setting {k}={v}"))?;
        }
        for (k, v) in &self.overrides {
            if taskhub_backends::option_key(k).is_none() {
                s.set(k, v).with_context(|| format!("--set {k}={v}"))?;
            }
        }
        s.validate().context("settings")?;
        Ok(s)
    }

    /// The settings that differ from the defaults, for the report (`shutdown_timeout` aside).
    pub fn changed_settings(&self, extra: &[(&str, &str)]) -> Vec<String> {
        extra
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .chain(self.overrides.iter().map(|(k, v)| format!("{k}={v}")))
            .collect()
    }

    /// The backend name for the report.
    pub fn backend_name(&self) -> &'static str {
        self.backend
    }

    /// The durability name for the report (SQLite only).
    pub fn durability_name(&self) -> Option<&'static str> {
        (self.backend == "sqlite").then_some(match self.durability {
            DurabilityArg::Normal => "normal",
            DurabilityArg::Full => "full",
        })
    }

    /// Where a fresh hub of the backend is: a file in `dir` (SQLite) or the hub `hub_name`
    /// (Azure: on the account of `--set azure.storage_connection_string=…`, else
    /// `TASKHUB_AZURE_STORAGE_CONNECTION_STRING`, else `TASKHUB_TEST_AZURE_CONNECTION_STRING`,
    /// else `UseDevelopmentStorage=true`; PostgreSQL: a schema of its own on the server of
    /// `TASKHUB_POSTGRES_URL`, else `TASKHUB_TEST_POSTGRES_URL`).
    fn backend_config(&self, dir: &std::path::Path, hub_name: String) -> BackendConfig {
        const ORIGIN: &str = "the bench's defaults";
        let account = std::env::var("TASKHUB_TEST_AZURE_CONNECTION_STRING")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "UseDevelopmentStorage=true".to_owned());
        let durability = match self.durability {
            DurabilityArg::Normal => "normal",
            DurabilityArg::Full => "full",
        };
        let mut overrides = vec![
            OptionValue::new(
                "sqlite.path",
                dir.join("bench.db").display().to_string(),
                ORIGIN,
            ),
            OptionValue::new("sqlite.durability", durability, "--durability"),
        ];
        for (k, v) in &self.overrides {
            if let Some(key) = taskhub_backends::option_key(k) {
                overrides.push(OptionValue::new(key, v, "--set"));
            }
        }
        let mut defaults = vec![OptionValue::new(
            "azure.storage_connection_string",
            account,
            ORIGIN,
        )];
        // PostgreSQL: `TASKHUB_POSTGRES_URL` (read by the backend) wins over the test server's
        // URL that `scripts/with-postgres.sh` exports.
        if let Some(url) = std::env::var("TASKHUB_TEST_POSTGRES_URL")
            .ok()
            .filter(|s| !s.trim().is_empty())
        {
            defaults.push(OptionValue::new("postgres.url", url, ORIGIN));
        }
        BackendConfig {
            defaults,
            env: std::env::vars().collect(),
            overrides,
            hub_name,
            instrument: true,
            ..BackendConfig::default()
        }
    }
}

/// A running task hub with its workers.
pub struct Bench {
    /// The workers (taken at shutdown).
    pub workers: Vec<WorkerHandle>,
    /// A client of the hub.
    pub client: TaskHubClient,
    /// The hub.
    pub hub: TaskHub,
    /// The dispatcher the workers hand SDK work to, if any (`grpc` scenario).
    pub dispatcher: Option<taskhub_grpc::Dispatcher>,
    /// The store's call counters.
    pub metrics: StoreMetrics,
    /// The store as opened, for its backend's own counters (SQLite's writer, Azure's
    /// requests).
    pub opened: Arc<OpenedStore>,
    /// Where the hub is (deleted at close).
    location: Box<dyn HubLocation>,
    /// The store the hub runs on.
    pub store: Arc<dyn TaskHubStore>,
    /// The settings the hub was opened with.
    pub settings: Settings,
    /// Worker processes (`--worker-processes`), stopped by closing their stdin.
    children: Vec<std::process::Child>,
    /// The PostgreSQL server's counters when the workers had started (`--backend postgres`).
    server: Option<crate::server::ServerStart>,
    _dir: TempDir,
}

/// The variables that make this binary a worker process on a bench's hub.
pub const CHILD_HUB_VAR: &str = "TASKHUB_BENCH_CHILD_HUB";
/// The bench's temp dir (its SQLite file), for a worker process.
pub const CHILD_DIR_VAR: &str = "TASKHUB_BENCH_CHILD_DIR";

/// Starts one worker process on the hub `hub_name` and waits for its `ready` line.
fn spawn_child(hub_name: &str, dir: &std::path::Path) -> anyhow::Result<std::process::Child> {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(std::env::args().skip(1))
        .env(CHILD_HUB_VAR, hub_name)
        .env(CHILD_DIR_VAR, dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot start a worker process")?;
    let stdout = child.stdout.take().context("the worker's stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    if !line.starts_with("ready") {
        bail!("a worker process did not start: {line:?}");
    }
    Ok(child)
}

/// The worker-process side of `--worker-processes`: opens the bench's hub, runs `--workers`
/// workers with the scenarios' registry, says `ready`, and shuts them down when stdin closes.
pub async fn run_child(args: &Args, hub_name: String, dir: PathBuf) -> anyhow::Result<()> {
    let config = Config::from_args(args)?;
    let location = taskhub_backends::locate(config.backend, &config.backend_config(&dir, hub_name))
        .context("the backend's options")?;
    let opened = location
        .open(OpenMode::Existing, false)
        .await
        .context("cannot open the bench's hub")?;
    let hub = TaskHub::open(opened.store.clone(), config.settings(&[])?).await?;
    let mut workers = Vec::new();
    for _ in 0..config.workers {
        workers.push(
            Worker::start(
                &hub,
                crate::workloads::registry(&crate::workloads::Stamps::default()),
            )
            .await?,
        );
    }
    println!("ready");
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    })
    .await?;
    for w in workers {
        w.shutdown().await;
    }
    Ok(())
}

impl Bench {
    /// Opens a fresh store and hub with `settings` and starts `config.workers` workers with
    /// `registry` (in this process; they balance the partitions through leases).
    pub async fn open(
        config: &Config,
        settings: Settings,
        registry: Registry,
    ) -> anyhow::Result<Self> {
        Self::open_with(config, settings, registry, |_| None).await
    }

    /// As [`open`](Self::open); when `dispatcher` gives one for the hub, the workers hand
    /// what `registry` does not name to it (SDK workers over gRPC).
    pub async fn open_with(
        config: &Config,
        settings: Settings,
        registry: Registry,
        dispatcher: impl FnOnce(&TaskHub) -> Option<taskhub_grpc::Dispatcher>,
    ) -> anyhow::Result<Self> {
        let dir = TempDir::new(&config.dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let hub_name = format!("Bench{}x{nanos:x}", std::process::id());
        let backend_config = config.backend_config(&dir.0, hub_name.clone());
        let location = taskhub_backends::locate(config.backend, &backend_config)
            .context("the backend's options")?;
        let opened = location
            .open(OpenMode::CreateIfMissing, true)
            .await
            .with_context(|| {
                format!(
                    "cannot open {} (for Azure: is Azurite running? see bench/README.md)",
                    location.describe()
                )
            })?;
        let metrics = opened
            .metrics
            .clone()
            .context("the store is not instrumented")?;
        let store = opened.store.clone();
        let opened = Arc::new(opened);
        let hub = TaskHub::open(store.clone(), settings.clone())
            .await
            .context("cannot open the task hub")?;
        let dispatcher = dispatcher(&hub);
        let mut workers = Vec::new();
        let mut children = Vec::new();
        for _ in 0..config.worker_processes {
            children.push(spawn_child(&hub_name, &dir.0)?);
        }
        let in_process = if config.worker_processes > 0 {
            0
        } else {
            config.workers
        };
        for _ in 0..in_process {
            let worker = match &dispatcher {
                Some(d) => {
                    Worker::start_with_executor(&hub, registry.clone(), Arc::new(d.clone())).await
                }
                None => Worker::start(&hub, registry.clone()).await,
            };
            workers.push(worker.context("cannot start a worker")?);
        }
        let client = hub.client();
        let server = crate::server::start(config.backend_name(), &backend_config).await;
        Ok(Self {
            workers,
            client,
            hub,
            dispatcher,
            metrics,
            opened,
            location,
            store,
            settings,
            children,
            server,
            _dir: dir,
        })
    }

    /// A client on a second hub handle over the same store: it shares no in-process wake-up
    /// with the workers, so its messages reach them only through storage, as from another
    /// process.
    pub async fn foreign_client(&self) -> anyhow::Result<TaskHubClient> {
        let hub = TaskHub::open(self.store.clone(), self.settings.clone())
            .await
            .context("cannot open a second hub handle")?;
        Ok(hub.client())
    }

    /// The Azure store's storage operations so far, if the backend is Azure.
    pub fn azure_ops(&self) -> Option<OpCounts> {
        azure_ops(&self.opened)
    }

    /// Counters of the workers, summed (zeroes once they are shut down).
    pub fn stats(&self) -> taskhub::WorkerStats {
        let mut sum = taskhub::WorkerStats::default();
        for w in &self.workers {
            let s = w.stats();
            sum.turns += s.turns;
            sum.activities += s.activities;
            sum.dead_lettered += s.dead_lettered;
            sum.discarded += s.discarded;
            sum.checkpoint_conflicts += s.checkpoint_conflicts;
            sum.entity_batches += s.entity_batches;
            sum.entity_operations += s.entity_operations;
        }
        sum
    }

    /// The SQLite writer's counters (write requests and the transactions they were grouped
    /// into), if the backend is SQLite.
    pub fn writer_stats(&self) -> Option<taskhub_sqlite::WriterStats> {
        writer_stats(&self.opened)
    }

    /// Shuts the workers down and deletes the hub (an Azure hub's objects, a SQLite file);
    /// on PostgreSQL, returns what the server did since the workers started.
    pub async fn close(mut self) -> Option<crate::server::ServerUse> {
        for w in self.workers.drain(..) {
            w.shutdown().await;
        }
        for mut child in self.children.drain(..) {
            drop(child.stdin.take());
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
        let Self {
            client,
            opened,
            store,
            location,
            server,
            hub,
            workers,
            dispatcher,
            ..
        } = self;
        drop((client, opened, store, hub, workers, dispatcher));
        let server = match server {
            Some(start) => start.end().await,
            None => None,
        };
        if let Err(e) = location.delete().await {
            eprintln!(
                "taskhub-bench: could not delete {}: {e}",
                location.describe()
            );
        }
        server
    }
}

/// The SQLite writer's counters, if the store is SQLite's.
pub fn writer_stats(opened: &OpenedStore) -> Option<taskhub_sqlite::WriterStats> {
    opened
        .downcast::<SqliteStore>()
        .map(SqliteStore::writer_stats)
}

/// Azure Storage operations so far, if the store is Azure's.
pub fn azure_ops(opened: &OpenedStore) -> Option<OpCounts> {
    opened.downcast::<AzureStore>().map(AzureStore::op_counts)
}

/// A duration of `secs` seconds, which must be positive and finite.
fn positive_secs(secs: f64, flag: &str) -> anyhow::Result<Duration> {
    if !(secs > 0.0 && secs.is_finite()) {
        bail!("{flag} must be a positive number of seconds");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Starts `count` instances of `name` with `input`, IDs `<prefix>-<i>`, from several client
/// tasks at once. Returns the IDs in order and when each start returned.
pub async fn start_many<I>(
    client: &TaskHubClient,
    name: &'static str,
    prefix: &str,
    input: I,
    count: u64,
) -> anyhow::Result<Vec<(InstanceId, Instant)>>
where
    I: Serialize + Clone + Send + Sync + 'static,
{
    let ids: Arc<Vec<InstanceId>> = Arc::new(
        (0..count)
            .map(|i| InstanceId::new(format!("{prefix}-{i:06}")))
            .collect::<Result<_, _>>()?,
    );
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..STARTERS.min(ids.len()) {
        let (client, ids, next, input) = (client.clone(), ids.clone(), next.clone(), input.clone());
        tasks.spawn(async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(id) = ids.get(i) else {
                    return Ok::<_, anyhow::Error>(done);
                };
                let options = StartOptions {
                    instance_id: Some(id.clone()),
                    ..StartOptions::default()
                };
                client
                    .start_with(name, input.clone(), options)
                    .await
                    .with_context(|| format!("cannot start {id}"))?;
                done.push((i, Instant::now()));
            }
        });
    }
    let mut started = vec![None; ids.len()];
    while let Some(joined) = tasks.join_next().await {
        for (i, at) in joined.context("a starter task panicked")?? {
            started[i] = Some(at);
        }
    }
    ids.iter()
        .zip(started)
        .map(|(id, at)| Ok((id.clone(), at.context("an instance was not started")?)))
        .collect()
}

/// Waits for each instance in turn and checks that it completed.
pub async fn wait_all(
    client: &TaskHubClient,
    ids: impl IntoIterator<Item = InstanceId>,
    timeout: Duration,
) -> anyhow::Result<Vec<InstanceStatus>> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    for id in ids {
        let left = deadline.saturating_duration_since(Instant::now());
        out.push(wait_one(client, &id, left).await?);
    }
    Ok(out)
}

/// [`wait_all`] for the instances [`start_many`] started.
pub async fn wait_started(
    client: &TaskHubClient,
    started: Vec<(InstanceId, Instant)>,
    timeout: Duration,
) -> anyhow::Result<Vec<InstanceStatus>> {
    wait_all(client, started.into_iter().map(|(id, _)| id), timeout).await
}

/// Each instance's time from its creation to its completion (stored times, ms resolution).
pub fn created_to_completed(done: &[InstanceStatus]) -> Vec<Duration> {
    done.iter()
        .filter_map(|s| {
            s.row
                .completed_at
                .map(|c| c.saturating_since(s.row.created_at))
        })
        .collect()
}

/// Waits for one instance and checks that it completed.
pub async fn wait_one(
    client: &TaskHubClient,
    id: &InstanceId,
    timeout: Duration,
) -> anyhow::Result<InstanceStatus> {
    let status = client
        .wait_for_completion(id, timeout)
        .await
        .with_context(|| format!("waiting for {id}"))?;
    if status.status() != OrchestrationStatus::Completed {
        bail!("{id} ended {} ({:?})", status.status(), status.row.failure);
    }
    Ok(status)
}

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(parent: &std::path::Path) -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = parent.join(format!("taskhub-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
