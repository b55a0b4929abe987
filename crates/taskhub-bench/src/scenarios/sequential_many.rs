//! `sequential-many`: 50 orchestrations × 20 sequential activities, all at once.

use crate::harness::{created_to_completed, start_many, wait_started, Bench, Config};
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
        wait_started(&bench.client, started, TIMEOUT).await
    };
    let done = progress::drive("sequential-many", total, work, || bench.stats().activities).await?;
    let m = span.end();
    bench.close().await;
    let durations = created_to_completed(&done);
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
