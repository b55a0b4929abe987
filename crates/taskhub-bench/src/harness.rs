//! One benchmark run's task hub: a fresh store (wrapped in [`Instrumented`]), a hub, one
//! worker and a client, plus helpers to start and await many instances.

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
use taskhub_azure::{AzureOptions, AzureStore, HubName, OpCounts, StorageAccount};
use taskhub_sqlite::{Durability, SqliteOptions, SqliteStore};
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Instrumented, StoreMetrics, SystemClock, TaskHubStore};
use tokio::task::JoinSet;

use crate::args::{Args, Backend, DurabilityArg};

/// How many client tasks start instances at once (so starts group-commit).
const STARTERS: usize = 32;

/// What every scenario run shares: backend, durability, scale and setting overrides.
#[derive(Debug, Clone)]
pub struct Config {
    /// The backend.
    pub backend: Backend,
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

    /// The runtime settings: defaults, then the scenario's own `extra`, then `--set`.
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
            s.set(k, v).with_context(|| format!("--set {k}={v}"))?;
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
        match self.backend {
            Backend::Sqlite => "sqlite",
            Backend::Memory => "memory",
            Backend::Azure => "azure",
        }
    }

    /// The Azure connection string: the `azure_storage_connection_string` setting if set,
    /// else `TASKHUB_AZURE_STORAGE_CONNECTION_STRING`, else
    /// `TASKHUB_TEST_AZURE_CONNECTION_STRING`, else `UseDevelopmentStorage=true`.
    pub fn azure_connection_string(&self, settings: &Settings) -> String {
        let set = settings.azure_storage_connection_string.expose();
        if !set.is_empty() {
            return set.to_owned();
        }
        [
            "TASKHUB_AZURE_STORAGE_CONNECTION_STRING",
            "TASKHUB_TEST_AZURE_CONNECTION_STRING",
        ]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "UseDevelopmentStorage=true".to_owned())
    }

    /// The durability name for the report (`None` on the memory backend).
    pub fn durability_name(&self) -> Option<&'static str> {
        match (self.backend, self.durability) {
            (Backend::Memory | Backend::Azure, _) => None,
            (Backend::Sqlite, DurabilityArg::Normal) => Some("normal"),
            (Backend::Sqlite, DurabilityArg::Full) => Some("full"),
        }
    }
}

/// A running task hub with its workers.
pub struct Bench {
    /// The workers (taken at shutdown).
    pub workers: Vec<WorkerHandle>,
    /// A client of the hub.
    pub client: TaskHubClient,
    /// The store's call counters.
    pub metrics: StoreMetrics,
    /// The SQLite store, for its writer's group-commit counters.
    pub sqlite: Option<Arc<Instrumented<SqliteStore>>>,
    /// The Azure store, for its storage operation counters (its hub is deleted at close).
    pub azure: Option<Arc<Instrumented<AzureStore>>>,
    /// The store the hub runs on.
    pub store: Arc<dyn TaskHubStore>,
    /// The settings the hub was opened with.
    pub settings: Settings,
    _dir: Option<TempDir>,
}

impl Bench {
    /// Opens a fresh store and hub with `settings` and starts `config.workers` workers with
    /// `registry` (in this process; they balance the partitions through leases).
    pub async fn open(
        config: &Config,
        settings: Settings,
        registry: Registry,
    ) -> anyhow::Result<Self> {
        let mut sqlite = None;
        let mut azure = None;
        let (store, metrics, dir): (Arc<dyn TaskHubStore>, StoreMetrics, Option<TempDir>) =
            match config.backend {
                Backend::Memory => {
                    let s = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
                    let m = s.metrics();
                    (Arc::new(s), m, None)
                }
                Backend::Sqlite => {
                    let dir = TempDir::new(&config.dir)?;
                    let durability = match config.durability {
                        DurabilityArg::Normal => Durability::Normal,
                        DurabilityArg::Full => Durability::Full,
                    };
                    let options =
                        SqliteOptions::new(dir.0.join("bench.db")).with_durability(durability);
                    let s = Instrumented::new(
                        SqliteStore::open(options).context("cannot open the SQLite store")?,
                    );
                    let m = s.metrics();
                    let s = Arc::new(s);
                    sqlite = Some(s.clone());
                    (s, m, Some(dir))
                }
                Backend::Azure => {
                    let s = Instrumented::new(open_azure(config, &settings).await?);
                    let m = s.metrics();
                    let s = Arc::new(s);
                    azure = Some(s.clone());
                    (s, m, None)
                }
            };
        let hub = TaskHub::open(store.clone(), settings.clone())
            .await
            .context("cannot open the task hub")?;
        let mut workers = Vec::new();
        for _ in 0..config.workers {
            workers.push(
                Worker::start(&hub, registry.clone())
                    .await
                    .context("cannot start a worker")?,
            );
        }
        let client = hub.client();
        Ok(Self {
            workers,
            client,
            metrics,
            sqlite,
            azure,
            store,
            settings,
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
        self.azure.as_ref().map(|s| s.inner().op_counts())
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
        self.sqlite.as_ref().map(|s| s.inner().writer_stats())
    }

    /// Shuts the workers down (and deletes an Azure hub).
    pub async fn close(mut self) {
        for w in self.workers.drain(..) {
            w.shutdown().await;
        }
        if let Some(azure) = &self.azure {
            if let Err(e) = azure.inner().delete_hub().await {
                eprintln!("taskhub-bench: could not delete the Azure task hub: {e}");
            }
        }
    }
}

/// Opens a fresh Azure task hub with a name of its own (`Bench<pid><time>`).
async fn open_azure(config: &Config, settings: &Settings) -> anyhow::Result<AzureStore> {
    let account = StorageAccount::from_connection_string(&config.azure_connection_string(settings))
        .context("azure_storage_connection_string")?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hub = HubName::new(&format!("Bench{}x{nanos:x}", std::process::id()))?;
    AzureStore::create(AzureOptions {
        account,
        hub,
        clock: Arc::new(SystemClock::new()),
    })
    .await
    .context("cannot open the Azure task hub (is Azurite running? see bench/README.md)")
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
