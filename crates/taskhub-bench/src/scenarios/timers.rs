//! `timers`: 500 orchestrations each wait on a 1 s durable timer; how late does each fire?
//! Lateness is the orchestration's own recorded time of the turn after the timer minus the
//! timer's due time (ms resolution), so it includes queue polling and the turn's scheduling.

use std::time::Duration;

use crate::harness::{start_many, wait_started, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(500);
    let delay = config.time(Duration::from_secs(1));
    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let span = Span::begin(&bench);
    let work = async {
        let started = start_many(&bench.client, "Timer", "timer", delay_ms, n).await?;
        wait_started(&bench.client, started, TIMEOUT).await
    };
    let done = progress::drive("timers", n * 2, work, || bench.stats().turns).await?;
    let m = span.end();
    bench.close().await;
    let mut late = Vec::new();
    let mut early = 0u64;
    for s in &done {
        match s.output::<i64>()? {
            Some(ms) if ms >= 0 => late.push(Duration::from_millis(ms.unsigned_abs())),
            Some(_) => early += 1,
            None => {}
        }
    }
    let record = m
        .record("timers", config, n, n)
        .latencies("timer lateness (turn time - due time)", &late)
        .extra("timer_ms", delay_ms)
        .extra("fired_early", early)
        .settings(config.changed_settings(&[]));
    let met = early == 0 && record.p99_ms.is_some_and(|p| p <= 50.0);
    Ok(vec![record.target("p99 lateness <= 50 ms", met)])
}
