//! The scenarios: each opens a fresh task hub, runs its workload, and returns its records.

mod entities;
mod events;
mod fanout;
mod grpc;
mod hello5;
mod history;
mod idle;
mod idle_ops;
mod large_starts;
mod latency;
mod pickup;
mod sequential;
mod sequential_many;
mod timers;

use std::time::{Duration, Instant};

use std::sync::Arc;

use taskhub_azure::OpCounts;
use taskhub_backends::OpenedStore;
use taskhub_storage::{MetricsSnapshot, StoreMetrics};

use crate::args::ScenarioArg;
use crate::harness::{Bench, Config};
use crate::procstats;
use crate::report::Record;

/// How long any one wait of a scenario may take before it fails.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// Runs one scenario.
pub async fn run(scenario: ScenarioArg, config: &Config) -> anyhow::Result<Vec<Record>> {
    match scenario {
        ScenarioArg::Sequential => sequential::run(config).await,
        ScenarioArg::SequentialMany => sequential_many::run(config).await,
        ScenarioArg::Fanout => fanout::run(config).await,
        ScenarioArg::Hello5 => hello5::run(config).await,
        ScenarioArg::Events => events::run(config).await,
        ScenarioArg::Entities => entities::run(config).await,
        ScenarioArg::Timers => timers::run(config).await,
        ScenarioArg::Latency => latency::run(config).await,
        ScenarioArg::Idle => idle::run(config).await,
        ScenarioArg::History => history::run(config).await,
        ScenarioArg::IdleOps => idle_ops::run(config).await,
        ScenarioArg::Pickup => pickup::run(config).await,
        ScenarioArg::Grpc => grpc::run(config).await,
        ScenarioArg::LargeStarts => large_starts::run(config).await,
        ScenarioArg::All => Ok(Vec::new()),
    }
}

/// The measured part of a scenario: wall time, storage calls, CPU and peak memory.
pub struct Span {
    started: Instant,
    ops: MetricsSnapshot,
    cpu: Option<Duration>,
    metrics: StoreMetrics,
    writer: Option<taskhub_sqlite::WriterStats>,
    azure_ops: Option<OpCounts>,
    opened: Arc<OpenedStore>,
}

/// What a [`Span`] measured.
pub struct Measured {
    /// Wall time.
    pub took: Duration,
    /// Storage calls during the span.
    pub ops: MetricsSnapshot,
    /// CPU time during the span.
    pub cpu: Option<Duration>,
    /// Peak RSS since the span began (or the process began, if the reset was refused).
    pub peak_rss_mb: Option<f64>,
    /// The SQLite writer's counters over the span.
    pub writer: Option<taskhub_sqlite::WriterStats>,
    /// Azure Storage operations during the span, if the backend is Azure.
    pub azure: Option<OpCounts>,
}

impl Span {
    /// Starts measuring the bench's store (and resets the peak RSS).
    pub fn begin(bench: &Bench) -> Self {
        procstats::reset_peak();
        Self {
            started: Instant::now(),
            ops: bench.metrics.snapshot(),
            cpu: procstats::cpu_time(),
            metrics: bench.metrics.clone(),
            writer: bench.writer_stats(),
            azure_ops: bench.azure_ops(),
            opened: bench.opened.clone(),
        }
    }

    /// Wall time so far.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops measuring.
    pub fn end(&self) -> Measured {
        let took = self.started.elapsed();
        Measured {
            took,
            ops: self.metrics.snapshot().since(&self.ops),
            cpu: procstats::cpu_time()
                .zip(self.cpu)
                .map(|(b, a)| b.saturating_sub(a)),
            peak_rss_mb: procstats::peak_rss_mb(),
            writer: crate::harness::writer_stats(&self.opened)
                .zip(self.writer)
                .map(|(b, a)| taskhub_sqlite::WriterStats {
                    requests: b.requests - a.requests,
                    transactions: b.transactions - a.transactions,
                    inline_requests: b.inline_requests - a.inline_requests,
                    wal_checkpoints: b.wal_checkpoints - a.wal_checkpoints,
                }),
            azure: crate::harness::azure_ops(&self.opened)
                .zip(self.azure_ops)
                .map(|(b, a)| b.since(&a)),
        }
    }
}

impl Measured {
    /// A record of `n` units of work with these measurements (throughput not yet set).
    pub fn record(&self, scenario: &str, config: &Config, n: u64, steps: u64) -> Record {
        let record = Record::new(scenario, config, n, self.took)
            .storage(&self.ops, steps)
            .process(self.peak_rss_mb, self.cpu);
        let record = match &self.azure {
            Some(ops) => record.azure(ops, steps),
            None => record,
        };
        match self.writer {
            Some(w) => record
                .extra("sqlite_write_requests", w.requests)
                .extra("sqlite_inline_write_requests", w.inline_requests)
                .extra("sqlite_write_transactions", w.transactions)
                .extra("sqlite_wal_checkpoints", w.wal_checkpoints),
            None => record,
        }
    }
}
