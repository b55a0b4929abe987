//! `hello5`: 2,000 orchestrations of five sequential activities each.

use crate::harness::{created_to_completed, start_many, wait_started, Bench, Config};
use crate::progress;
use crate::report::{round3, Record};
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(2_000);
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    let work = async {
        let started = start_many(&bench.client, "Hello5", "hello", (), n).await?;
        wait_started(&bench.client, started, TIMEOUT).await
    };
    let done = progress::drive("hello5", n * 5, work, || bench.stats().activities).await?;
    let m = span.end();
    let server = bench.close().await;
    let durations = created_to_completed(&done);
    let record = m
        .record("hello5", config, n, n * 5)
        .rate("orchestrations/s")
        .latencies(
            "instance created to completed (stored times, ms resolution)",
            &durations,
        )
        .extra("activities", n * 5)
        .server(server, "orchestration", n, m.cpu)
        .settings(config.changed_settings(&[]));
    let record = match &m.azure {
        Some(ops) => record.extra(
            "azure_ops_per_orchestration",
            round3(ops.total() as f64 / n as f64),
        ),
        None => record,
    };
    let met = record.throughput.is_some_and(|t| t >= 1_000.0);
    Ok(vec![record.target(">= 1000 orchestrations/s", met)])
}
