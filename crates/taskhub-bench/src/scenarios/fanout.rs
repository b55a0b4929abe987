//! `fanout`: one orchestration schedules n activities at once and awaits them all (n = 1,000
//! and 10,000).

use crate::harness::{start_many, wait_one, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let mut out = Vec::new();
    for base in [1_000u64, 10_000] {
        let n = config.count(base);
        let bench =
            Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
        let span = Span::begin(&bench);
        let work = async {
            let started = start_many(&bench.client, "FanOut", "fan", n, 1).await?;
            wait_one(&bench.client, &started[0].0, TIMEOUT).await
        };
        progress::drive(&format!("fanout {n}"), n, work, || bench.stats().activities).await?;
        let m = span.end();
        let turns = bench.stats().turns;
        bench.close().await;
        let mut record = m
            .record("fanout", config, n, n)
            .variant(format!("n={base}"))
            .rate("activities/s")
            .extra("turns", turns)
            .settings(config.changed_settings(&[]));
        if base == 10_000 {
            let met = record.throughput.is_some_and(|t| t >= 10_000.0);
            record = record.target(">= 10000 activities/s", met);
        }
        out.push(record);
    }
    Ok(out)
}
