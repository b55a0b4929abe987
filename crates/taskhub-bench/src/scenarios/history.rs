//! `history`: one orchestration runs 2,500 sequential activities (about 10,000 history
//! events), with and without extended sessions; the time per step as the history grows.
//! A step is the time from one activity's start to the next one's.

use std::time::Duration;

use taskhub::StatusOptions;

use crate::harness::{start_many, wait_one, Bench, Config};
use crate::progress;
use crate::report::{round3, Record};
use crate::stats::{gaps, percentile_ms};
use crate::workloads::{registry, SequentialInput, Stamps};

use super::{Span, TIMEOUT};

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let steps = config.count(2_500);
    let window = (steps / 10).max(1) as usize;
    let mut out = Vec::new();
    for extended in [true, false] {
        let value = if extended { "true" } else { "false" };
        let extra = [("extended_sessions_enabled", value)];
        let stamps = Stamps::default();
        let bench = Bench::open(config, config.settings(&extra)?, registry(&stamps)).await?;
        let span = Span::begin(&bench);
        let started = start_many(
            &bench.client,
            "Sequential",
            "history",
            SequentialInput {
                n: steps,
                stamp: true,
            },
            1,
        )
        .await?;
        let id = started[0].0.clone();
        progress::drive(
            &format!("history (extended={value})"),
            steps,
            wait_one(&bench.client, &id, TIMEOUT),
            || stamps.len() as u64,
        )
        .await?;
        let m = span.end();
        let events = bench
            .client
            .get_status(&id, StatusOptions { history: true })
            .await?
            .and_then(|s| s.history)
            .map_or(0, |h| h.len());
        bench.close().await;
        let step_times: Vec<Duration> = gaps(&stamps.take());
        let first = percentile_ms(&step_times[..window.min(step_times.len())], 0.5);
        let last = percentile_ms(&step_times[step_times.len().saturating_sub(window)..], 0.5);
        let mut record = m
            .record("history", config, steps, steps)
            .variant(format!("extended_sessions={value}"))
            .rate("steps/s")
            .latencies(
                "step time (activity start to next activity start)",
                &step_times,
            )
            .extra("history_events", events)
            .extra("window_steps", window)
            .settings(config.changed_settings(&extra));
        if let (Some(f), Some(l)) = (first, last) {
            record = record
                .extra("first_window_step_p50_ms", round3(f))
                .extra("last_window_step_p50_ms", round3(l));
            if extended {
                let flat = l <= 2.0 * f.max(0.1);
                record = record.target("last/first step time <= 2 (flat)", flat);
            }
        }
        out.push(record);
    }
    Ok(out)
}
