//! `sequential`: one orchestration, 200 activities in sequence; throughput and the time from
//! one activity's start to the next one's (a full round trip through the runtime).

use crate::harness::{start_many, wait_one, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::stats::gaps;
use crate::workloads::{registry, SequentialInput, Stamps};

use super::{Span, TIMEOUT};

/// Target: at least this many activities per second.
const TARGET: f64 = 1_000.0;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(200);
    let stamps = Stamps::default();
    let bench = Bench::open(config, config.settings(&[])?, registry(&stamps)).await?;
    let span = Span::begin(&bench);
    let started = start_many(
        &bench.client,
        "Sequential",
        "seq",
        SequentialInput { n, stamp: true },
        1,
    )
    .await?;
    let (id, _) = &started[0];
    progress::drive(
        "sequential",
        n,
        wait_one(&bench.client, id, TIMEOUT),
        || bench.stats().activities,
    )
    .await?;
    let m = span.end();
    bench.close().await;
    let steps = gaps(&stamps.take());
    let record = m
        .record("sequential", config, n, n)
        .rate("activities/s")
        .latencies("activity start to next activity start", &steps)
        .settings(config.changed_settings(&[]));
    let met = record.throughput.is_some_and(|t| t >= TARGET);
    Ok(vec![record.target(">= 1000 activities/s", met)])
}
