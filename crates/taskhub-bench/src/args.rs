//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Benchmark scenarios for Taskhub: one JSON object per result on stdout, a table on stderr.
#[derive(Debug, Parser)]
#[command(name = "taskhub-bench", version)]
pub struct Args {
    /// The scenario to run (`all` runs every one in turn).
    #[arg(value_enum)]
    pub scenario: ScenarioArg,
    /// The storage backend, by its name in `taskhub_backends::BACKENDS`: `sqlite` (a temporary
    /// file), `memory`, or `azure` (Azure Storage or Azurite, on a fresh task hub deleted at
    /// the end; the account: `--set azure.storage_connection_string=...`, else the
    /// environment variable `TASKHUB_AZURE_STORAGE_CONNECTION_STRING`, else
    /// `TASKHUB_TEST_AZURE_CONNECTION_STRING` (what `scripts/with-azurite.sh` exports), else
    /// `UseDevelopmentStorage=true`), or `postgres` (a fresh hub, a schema, on the server of
    /// `TASKHUB_POSTGRES_URL`, else `TASKHUB_TEST_POSTGRES_URL`, what `scripts/with-postgres.sh`
    /// exports; deleted at the end).
    #[arg(long, default_value = "sqlite", value_parser = backend_name)]
    pub backend: &'static str,
    /// SQLite durability (`synchronous` = NORMAL or FULL; the SQLite option
    /// `sqlite.durability`, passed to `SqliteOptions`); ignored by the memory backend.
    #[arg(long, value_enum, default_value_t = DurabilityArg::Normal)]
    pub durability: DurabilityArg,
    /// Workers on the task hub, 1 to 16, all in this process.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Multiplies every scenario's counts and durations (e.g. 0.01 for a smoke run).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// A runtime setting, `name=value` (repeatable), e.g. `--set max_queue_polling_interval=50ms`,
    /// or a backend option `<backend>.<name>=value`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Runs each scenario this many times: every run's JSON line (`"run": k`), then one with
    /// the medians (`"run": "median"`); the table shows the medians.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Directory for the temporary SQLite files (default: the system temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// `idle-ops`: how long one worker sits on a fresh, empty hub while its storage
    /// operations are counted, in seconds (not scaled).
    #[arg(long, default_value_t = 60.0)]
    pub idle_window: f64,
    /// `pickup`: seconds between two starts from the second hub handle (not scaled). Longer
    /// than `max_queue_polling_interval` lets the worker's idle back-off reach its maximum
    /// before each start, so the samples show the worst case.
    #[arg(long, default_value_t = 35.0)]
    pub pickup_gap: f64,
    /// `idle-ops`: queue sampling for the metrics gauges, as with the dashboard on: `off` (no
    /// recorder), `always` (every lease pass), `while-watched` (what `taskhub serve` and
    /// `taskhub worker --http` do: only within a minute of a scrape or dashboard request;
    /// nobody looks during the scenario).
    #[arg(long, value_enum, default_value_t = QueueSamplingArg::Off)]
    pub queue_sampling: QueueSamplingArg,
    /// Workers in processes of their own (this binary run again as a worker on the scenario's
    /// hub, `--workers` workers each) instead of in this process, which then only starts and
    /// awaits instances: worker scaling across processes. 0: in this process. For the hub's
    /// default settings only (`hello5`, `fanout`, `sequential`).
    #[arg(long, default_value_t = 0)]
    pub worker_processes: usize,
}

/// When workers sample queue depths (`taskhub::telemetry::QueueSampling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueueSamplingArg {
    /// Never.
    Off,
    /// On every lease pass.
    Always,
    /// Only while someone looks (nobody does here).
    WhileWatched,
}

impl QueueSamplingArg {
    /// The runtime's mode.
    pub fn mode(self) -> taskhub::telemetry::QueueSampling {
        use taskhub::telemetry::QueueSampling;
        match self {
            Self::Off => QueueSampling::Off,
            Self::Always => QueueSampling::Always,
            Self::WhileWatched => QueueSampling::WhileWatched,
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Always => "always",
            Self::WhileWatched => "while-watched",
        }
    }
}

/// Which scenario(s) to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScenarioArg {
    /// One orchestration, 200 activities in sequence.
    Sequential,
    /// 50 orchestrations of 20 sequential activities.
    SequentialMany,
    /// One orchestration, 1,000 and 10,000 activities in parallel.
    Fanout,
    /// 2,000 orchestrations of five sequential activities.
    Hello5,
    /// 500 external events raised back-to-back at one waiting orchestration.
    Events,
    /// Durable entities: one entity and 1,000 entities hammered by 16 senders (operations/s),
    /// and the `call_entity` round trip.
    Entities,
    /// 500 orchestrations with a 1 s timer: how late each fires.
    Timers,
    /// A one-activity orchestration started every 20 ms for 10 s: end-to-end latency.
    Latency,
    /// 100,000 instances waiting on events: peak memory and idle CPU.
    Idle,
    /// One orchestration growing to 10,000 history events, with and without extended sessions.
    History,
    /// One worker on a fresh, empty hub for `--idle-window`: storage operations per
    /// worker-minute.
    IdleOps,
    /// Starts raised from a second hub handle (no in-process wake-up, as from another
    /// process), `--pickup-gap` apart: start call returned to the orchestration running.
    Pickup,
    /// `hello5` (1,000 orchestrations) and a 1,000-activity fan-out in process and over the
    /// Durable Task gRPC protocol (a stand-in SDK worker in Rust, in a child process): the
    /// gRPC share of the in-process throughput and the server's CPU per work item.
    Grpc,
    /// Twelve 15 MB starts over the gRPC protocol with no SDK worker connected, then a
    /// stand-in worker completes them: the process's RSS at idle, while the turns wait, and
    /// after (what is not given back).
    LargeStarts,
    /// Every scenario above, in turn (on `azure`: the ones that make sense on an emulator).
    All,
}

impl ScenarioArg {
    /// The scenarios to run for this choice.
    pub fn expand(self, backend: &str) -> Vec<Self> {
        match self {
            Self::All if backend == "azure" => vec![
                Self::Sequential,
                Self::Hello5,
                Self::Fanout,
                Self::Events,
                Self::Latency,
                Self::Idle,
                Self::IdleOps,
                Self::Pickup,
            ],
            Self::All => vec![
                Self::Sequential,
                Self::SequentialMany,
                Self::Fanout,
                Self::Hello5,
                Self::Events,
                Self::Entities,
                Self::Timers,
                Self::Latency,
                Self::History,
                Self::Grpc,
                Self::LargeStarts,
                // Last: the memory it holds stays in the process (RSS) after it ends.
                Self::Idle,
            ],
            one => vec![one],
        }
    }
}

/// A registered backend's name (any case).
fn backend_name(name: &str) -> Result<&'static str, String> {
    taskhub_backends::backend(name)
        .map(|b| b.name())
        .map_err(|e| e.to_string())
}

/// SQLite durability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// `synchronous = NORMAL`.
    Normal,
    /// `synchronous = FULL`.
    Full,
}
