//! `latency`: a one-activity orchestration started every 20 ms for 10 s; end-to-end latency
//! from the start call to the client seeing it completed.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use taskhub::{InstanceId, StartOptions};
use tokio::task::JoinSet;

use crate::harness::{wait_one, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let every = Duration::from_millis(20);
    let total = config.time(Duration::from_secs(10));
    let n = (total.as_millis() / every.as_millis()).max(1) as u64;
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    let work = async {
        let mut tick = tokio::time::interval(every);
        let mut waits = JoinSet::new();
        for i in 0..n {
            tick.tick().await;
            let id = InstanceId::new(format!("lat-{i:06}"))?;
            let client = bench.client.clone();
            waits.spawn(async move {
                let begun = Instant::now();
                let options = StartOptions {
                    instance_id: Some(id.clone()),
                    ..StartOptions::default()
                };
                client.start_with("One", (), options).await?;
                wait_one(&client, &id, TIMEOUT).await?;
                anyhow::Ok(begun.elapsed())
            });
        }
        let mut samples = Vec::new();
        while let Some(joined) = waits.join_next().await {
            samples.push(joined.context("a latency task panicked")??);
        }
        anyhow::Ok(samples)
    };
    let samples = progress::drive("latency", n, work, || bench.stats().activities).await?;
    let m = span.end();
    bench.close().await;
    let record = m
        .record("latency", config, n, n)
        .latencies("start call to completion seen by the client", &samples)
        .extra("interval_ms", 20)
        .settings(config.changed_settings(&[]));
    let met = record.p50_ms.is_some_and(|p| p <= 2.0) && record.p99_ms.is_some_and(|p| p <= 20.0);
    Ok(vec![record.target("p50 <= 2 ms, p99 <= 20 ms", met)])
}
