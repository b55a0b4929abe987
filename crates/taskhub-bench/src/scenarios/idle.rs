//! `idle`: 100,000 instances waiting on an external event. Peak memory of the process (VmHWM)
//! once all are waiting, and CPU used while idle afterwards.

use std::time::{Duration, Instant};

use anyhow::bail;

use crate::harness::{start_many, Bench, Config};
use crate::procstats;
use crate::progress;
use crate::report::{round1, round3, Record};
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

/// Most CPU that counts as "no measurable CPU": 1 % of one core.
const IDLE_CPU_SHARE: f64 = 0.01;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(100_000);
    let idle_for = config.time(Duration::from_secs(5));
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    let base_turns = bench.stats().turns;
    let work = async {
        start_many(&bench.client, "Idle", "idle", (), n).await?;
        let deadline = Instant::now() + TIMEOUT;
        while bench.stats().turns - base_turns < n {
            if Instant::now() > deadline {
                bail!("not every idle instance reached its wait");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        anyhow::Ok(())
    };
    progress::drive("idle: starting", n, work, || {
        bench.stats().turns - base_turns
    })
    .await?;
    let m = span.end();
    let idle_ops_before = bench.metrics.snapshot();
    let cpu_before = procstats::cpu_time();
    tokio::time::sleep(idle_for).await;
    let idle_cpu = procstats::cpu_time()
        .zip(cpu_before)
        .map(|(b, a)| b.saturating_sub(a));
    let idle_ops = bench.metrics.snapshot().since(&idle_ops_before);
    let peak = procstats::peak_rss_mb();
    let rss = procstats::rss_mb();
    bench.close().await;
    let mut record = m
        .record("idle", config, n, n)
        .rate("instances/s")
        .process(peak, m.cpu)
        .extra("idle_seconds", round3(idle_for.as_secs_f64()))
        .extra("idle_storage_ops", idle_ops.total_calls())
        .settings(config.changed_settings(&[]));
    if let Some(r) = rss {
        record = record.extra("rss_mb_idle", round1(r));
    }
    if let Some(c) = idle_cpu {
        record = record.extra("idle_cpu_seconds", round3(c.as_secs_f64()));
    }
    let quiet =
        idle_cpu.is_some_and(|c| c.as_secs_f64() <= IDLE_CPU_SHARE * idle_for.as_secs_f64());
    let small = peak.is_some_and(|p| p <= 1024.0);
    Ok(vec![record.target(
        "peak <= 1 GiB, idle CPU <= 1% of a core",
        quiet && small,
    )])
}
