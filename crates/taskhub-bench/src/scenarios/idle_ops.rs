//! `idle-ops`: one worker on a fresh, empty hub for `--idle-window`; its storage operations per
//! worker-minute (what an idle deployment pays), by kind on Azure.

use std::collections::BTreeMap;

use crate::harness::{Bench, Config};
use crate::report::{round3, Record};
use crate::workloads::{registry, Stamps};

use super::Span;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let one = Config {
        workers: 1,
        ..config.clone()
    };
    let bench = Bench::open(&one, one.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    tokio::time::sleep(one.idle_window).await;
    let m = span.end();
    bench.close().await;
    let minutes = m.took.as_secs_f64() / 60.0;
    let per_minute = |n: u64| round3(n as f64 / minutes);
    let mut record = m
        .record("idle-ops", &one, 1, 0)
        .extra("idle_seconds", round3(m.took.as_secs_f64()))
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
        record = record
            .extra("azure_ops_per_worker_minute", per_minute(ops.total()))
            .extra(
                "azure_ops_per_worker_minute_by_kind",
                serde_json::to_value(by_kind)?,
            );
    }
    Ok(vec![record])
}
