//! `events`: 500 external events raised back-to-back (one client, each raise awaited) at one
//! orchestration that waits for them one after the other.

use std::time::{Duration, Instant};

use anyhow::bail;

use crate::harness::{start_many, wait_one, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(500);
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let started = start_many(&bench.client, "Events", "events", n, 1).await?;
    let id = started[0].0.clone();
    // Let the first turn run, so the events arrive at a waiting orchestration.
    let ready = Instant::now();
    while bench.stats().turns == 0 {
        if ready.elapsed() > Duration::from_secs(30) {
            bail!("the Events orchestration did not start");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let span = Span::begin(&bench);
    let work = async {
        for i in 0..n {
            bench.client.raise_event(&id, "e", &i).await?;
        }
        let raised = span.elapsed();
        let status = wait_one(&bench.client, &id, TIMEOUT).await?;
        anyhow::Ok((raised, status))
    };
    let (raised, status) = progress::drive("events", n, work, || bench.stats().turns).await?;
    let m = span.end();
    let turns = bench.stats().turns;
    bench.close().await;
    let expected: u64 = (0..n).sum();
    if status.output::<u64>()? != Some(expected) {
        bail!("the Events orchestration saw the wrong events");
    }
    let record = m
        .record("events", config, n, n)
        .rate("events/s")
        .extra("raise_seconds", crate::report::round3(raised.as_secs_f64()))
        .extra("turns", turns)
        .settings(config.changed_settings(&[]));
    let met = record.throughput.is_some_and(|t| t >= 5_000.0);
    Ok(vec![record.target(">= 5000 events/s", met)])
}
