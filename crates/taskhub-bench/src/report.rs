//! One result of a scenario: a JSON line on stdout and a row of the table on stderr.
//! Fields a scenario cannot fill stay `None` and are left out of the JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use taskhub_azure::OpCounts;
use taskhub_storage::MetricsSnapshot;

use crate::harness::Config;

/// One result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Record {
    /// Scenario name.
    pub scenario: String,
    /// Which variant of the scenario (`n=1000`, `extended_sessions=false`), if it has several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// `sqlite` or `memory`.
    pub backend: &'static str,
    /// SQLite durability.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durability: Option<&'static str>,
    /// How many units of work (activities, orchestrations, events, timers...).
    pub n: u64,
    /// Wall time of the measured part.
    pub seconds: f64,
    /// Units per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// The unit of `throughput`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    /// Median of the scenario's latency samples (see `latency_of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    /// 99th percentile of the latency samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// Largest latency sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
    /// What the latency samples measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_of: Option<&'static str>,
    /// Peak RSS of the process during the scenario (VmHWM), MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_mb: Option<f64>,
    /// CPU time (user + system) of the process during the measured part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Storage seam calls per unit of work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_ops_per_step: Option<f64>,
    /// Storage seam calls by operation during the measured part.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub storage_ops: BTreeMap<&'static str, u64>,
    /// Mean wall time of one call, by operation (ms), as the caller saw it (queueing included).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub storage_call_ms: BTreeMap<&'static str, f64>,
    /// Azure Storage operations per unit of work (requests sent, every attempt counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_ops_per_step: Option<f64>,
    /// Azure Storage operations by kind during the measured part (`queue_put`, `table_batch`...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub azure_ops: BTreeMap<&'static str, u64>,
    /// The target of the issue, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Whether the target was met.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub met: Option<bool>,
    /// Runtime settings changed from the defaults for this run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
    /// With `--repeat`: the run number, or `"median"` for the record of medians.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<Value>,
    /// Scenario-specific values.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Record {
    /// A record for `scenario` with the run's backend and durability.
    pub fn new(scenario: &str, config: &Config, n: u64, took: Duration) -> Self {
        Self {
            scenario: scenario.to_owned(),
            backend: config.backend_name(),
            durability: config.durability_name(),
            n,
            seconds: (took.as_secs_f64() * 1e6).round() / 1e6,
            ..Self::default()
        }
    }

    /// Sets the throughput as `n / seconds` in `unit`.
    pub fn rate(mut self, unit: &'static str) -> Self {
        if self.seconds > 0.0 {
            self.throughput = Some(round1(self.n as f64 / self.seconds));
            self.unit = Some(unit);
        }
        self
    }

    /// Sets p50, p99 and max from `samples`, describing what they are.
    pub fn latencies(mut self, of: &'static str, samples: &[Duration]) -> Self {
        self.p50_ms = crate::stats::percentile_ms(samples, 0.5).map(round3);
        self.p99_ms = crate::stats::percentile_ms(samples, 0.99).map(round3);
        self.max_ms = crate::stats::percentile_ms(samples, 1.0).map(round3);
        if self.p50_ms.is_some() {
            self.latency_of = Some(of);
        }
        self
    }

    /// Sets the storage call counts of the measured part, per `steps` units.
    pub fn storage(mut self, ops: &MetricsSnapshot, steps: u64) -> Self {
        self.storage_ops = ops
            .nonzero()
            .map(|(op, stats)| (op.name(), stats.calls))
            .collect();
        self.storage_call_ms = ops
            .nonzero()
            .map(|(op, stats)| {
                let mean = stats.total.as_secs_f64() * 1000.0 / stats.calls as f64;
                (op.name(), round3(mean))
            })
            .collect();
        if steps > 0 {
            self.storage_ops_per_step = Some(round3(ops.total_calls() as f64 / steps as f64));
        }
        self
    }

    /// Sets the Azure Storage operation counts of the measured part, per `steps` units.
    pub fn azure(mut self, ops: &OpCounts, steps: u64) -> Self {
        self.azure_ops = ops.nonzero().map(|(k, n)| (k.name(), n)).collect();
        self.azure_ops.insert("total", ops.total());
        if steps > 0 {
            self.azure_ops_per_step = Some(round3(ops.total() as f64 / steps as f64));
        }
        self
    }

    /// Sets the peak RSS and CPU time.
    pub fn process(mut self, peak_rss_mb: Option<f64>, cpu: Option<Duration>) -> Self {
        self.peak_rss_mb = peak_rss_mb.map(round1);
        self.cpu_seconds = cpu.map(|d| round3(d.as_secs_f64()));
        self
    }

    /// Sets the target and whether it was met.
    pub fn target(mut self, text: &str, met: bool) -> Self {
        self.target = Some(text.to_owned());
        self.met = Some(met);
        self
    }

    /// Adds a scenario-specific value.
    pub fn extra(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The variant label.
    pub fn variant(mut self, v: impl Into<String>) -> Self {
        self.variant = Some(v.into());
        self
    }

    /// The settings changed for this run.
    pub fn settings(mut self, s: Vec<String>) -> Self {
        self.settings = s;
        self
    }

    /// One line of JSON.
    pub fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// Rounds to 3 decimals.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Rounds to 1 decimal.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The human table of `records`.
pub fn table(records: &[Record]) -> String {
    let header = [
        "scenario",
        "variant",
        "n",
        "seconds",
        "throughput",
        "p50 ms",
        "p99 ms",
        "rss MiB",
        "ops/step",
        "azure ops/step",
        "target",
        "met",
    ];
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| x.to_string());
    let rows: Vec<[String; 12]> = records
        .iter()
        .map(|r| {
            [
                r.scenario.clone(),
                r.variant.clone().unwrap_or_default(),
                r.n.to_string(),
                format!("{:.3}", r.seconds),
                r.throughput.map_or_else(
                    || "-".to_owned(),
                    |t| format!("{t:.0} {}", r.unit.unwrap_or_default()),
                ),
                opt(r.p50_ms),
                opt(r.p99_ms),
                opt(r.peak_rss_mb),
                opt(r.storage_ops_per_step),
                opt(r.azure_ops_per_step),
                r.target.clone().unwrap_or_default(),
                match r.met {
                    Some(true) => "yes".to_owned(),
                    Some(false) => "NO".to_owned(),
                    None => String::new(),
                },
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            let _ = write!(l, "{cell:<w$}  ");
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_owned));
    for row in &rows {
        line(row);
    }
    out
}
