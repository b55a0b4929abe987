//! `idle-ops`: `--workers` workers (default 1) on a fresh, empty hub for `--idle-window`; their
//! storage operations per worker-minute (what an idle deployment pays), by kind on Azure, over
//! the whole window and over its second half (the steady state, after the pollers' back-off
//! ramp and the first claims). `--queue-sampling` turns queue sampling on as the dashboard
//! does (`always`: as `serve` did before issue 20; `while-watched`: as it does now, with
//! nobody looking).

use std::collections::BTreeMap;

use crate::harness::{Bench, Config};
use crate::report::{round3, Record};
use crate::workloads::{registry, Stamps};

use super::Span;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let one = config.clone();
    let workers = one.workers.max(1) as f64;
    taskhub::telemetry::set_queue_sampling(one.queue_sampling.mode());
    let bench = Bench::open(&one, one.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    tokio::time::sleep(one.idle_window / 2).await;
    let second_half = Span::begin(&bench);
    tokio::time::sleep(one.idle_window - one.idle_window / 2).await;
    let steady = second_half.end();
    let m = span.end();
    bench.close().await;
    taskhub::telemetry::set_queue_sampling(taskhub::telemetry::QueueSampling::Off);
    let minutes = m.took.as_secs_f64() / 60.0;
    let per_minute = |n: u64| round3(n as f64 / minutes / workers);
    let steady_minutes = steady.took.as_secs_f64() / 60.0;
    let steady_per_minute = |n: u64| round3(n as f64 / steady_minutes / workers);
    let mut record = m
        .record("idle-ops", &one, 1, 0)
        .extra("idle_seconds", round3(m.took.as_secs_f64()))
        .extra("workers", one.workers)
        .extra("queue_sampling", one.queue_sampling.name())
        .extra(
            "storage_calls_per_worker_minute_second_half",
            steady_per_minute(steady.ops.total_calls()),
        )
        .extra(
            "storage_calls_per_worker_minute",
            per_minute(m.ops.total_calls()),
        )
        .settings(one.changed_settings(&[]));
    if let Some(ops) = &m.azure {
        let by_kind: BTreeMap<&str, f64> = ops
            .nonzero()
            .map(|(k, n)| (k.name(), per_minute(n)))
            .collect();
        if let Some(steady_ops) = &steady.azure {
            let by_kind: BTreeMap<&str, f64> = steady_ops
                .nonzero()
                .map(|(k, n)| (k.name(), steady_per_minute(n)))
                .collect();
            record = record
                .extra(
                    "azure_ops_per_worker_minute_second_half",
                    steady_per_minute(steady_ops.total()),
                )
                .extra(
                    "azure_ops_per_worker_minute_second_half_by_kind",
                    serde_json::to_value(by_kind)?,
                );
        }
        record = record
            .extra("azure_ops_per_worker_minute", per_minute(ops.total()))
            .extra(
                "azure_ops_per_worker_minute_by_kind",
                serde_json::to_value(by_kind)?,
            );
    }
    Ok(vec![record])
}
