//! `sequential-many`: 50 orchestrations × 20 sequential activities, all at once.

use std::time::Duration;

use crate::harness::{start_many, wait_all, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::{registry, SequentialInput, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let instances = config.count(50);
    let per = 20;
    let total = instances * per;
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    let work = async {
        let started = start_many(
            &bench.client,
            "Sequential",
            "seqmany",
            SequentialInput {
                n: per,
                stamp: false,
            },
            instances,
        )
        .await?;
        wait_all(
            &bench.client,
            started.into_iter().map(|(id, _)| id),
            TIMEOUT,
        )
        .await
    };
    let done = progress::drive("sequential-many", total, work, || bench.stats().activities).await?;
    let m = span.end();
    bench.close().await;
    let durations: Vec<Duration> = done
        .iter()
        .filter_map(|s| {
            s.row
                .completed_at
                .map(|c| c.saturating_since(s.row.created_at))
        })
        .collect();
    Ok(vec![m
        .record("sequential-many", config, total, total)
        .rate("activities/s")
        .latencies(
            "instance created to completed (stored times, ms resolution)",
            &durations,
        )
        .extra("instances", instances)
        .settings(config.changed_settings(&[]))])
}
