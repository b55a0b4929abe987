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
    /// The storage backend.
    #[arg(long, value_enum, default_value_t = Backend::Sqlite)]
    pub backend: Backend,
    /// SQLite durability (`synchronous` = NORMAL or FULL; the SQLite option
    /// `sqlite.durability`, passed to `SqliteOptions`); ignored by the memory backend.
    #[arg(long, value_enum, default_value_t = DurabilityArg::Normal)]
    pub durability: DurabilityArg,
    /// Workers on the task hub (only 1 until partition leases exist).
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Multiplies every scenario's counts and durations (e.g. 0.01 for a smoke run).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// A runtime setting, `name=value` (repeatable), e.g. `--set max_queue_polling_interval=50ms`.
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
    /// 500 orchestrations with a 1 s timer: how late each fires.
    Timers,
    /// A one-activity orchestration started every 20 ms for 10 s: end-to-end latency.
    Latency,
    /// 100,000 instances waiting on events: peak memory and idle CPU.
    Idle,
    /// One orchestration growing to 10,000 history events, with and without extended sessions.
    History,
    /// Every scenario above, in turn.
    All,
}

impl ScenarioArg {
    /// The scenarios to run for this choice.
    pub fn expand(self) -> Vec<Self> {
        match self {
            Self::All => vec![
                Self::Sequential,
                Self::SequentialMany,
                Self::Fanout,
                Self::Hello5,
                Self::Events,
                Self::Timers,
                Self::Latency,
                Self::History,
                // Last: the memory it holds stays in the process (RSS) after it ends.
                Self::Idle,
            ],
            one => vec![one],
        }
    }
}

/// The storage backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// SQLite in a temporary file.
    Sqlite,
    /// The in-memory backend.
    Memory,
}

/// SQLite durability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// `synchronous = NORMAL`.
    Normal,
    /// `synchronous = FULL`.
    Full,
}
