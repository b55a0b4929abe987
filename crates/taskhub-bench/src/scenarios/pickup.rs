//! `pickup`: how long a message from another process waits before a worker picks it up. A
//! client on a second hub handle (no in-process wake-up shared with the worker) starts an
//! orchestration every `--pickup-gap`; the sample is from its start call returning to the
//! orchestration's first turn running. With a gap longer than `max_queue_polling_interval`
//! the worker is fully backed off before each start: the samples approach the worst case.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use taskhub::{InstanceId, OrchestrationContext, OrchestrationError, StartOptions};

use crate::harness::{Bench, Config};
use crate::report::Record;
use crate::workloads::{registry, Stamps};

use super::{Span, TIMEOUT};

/// When each instance's first turn ran.
type Marks = Arc<Mutex<HashMap<InstanceId, Instant>>>;

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    let n = config.count(10);
    let marks: Marks = Arc::default();
    let mut reg = registry(&Stamps::default());
    let seen = marks.clone();
    reg.orchestration("Mark", move |ctx: OrchestrationContext, _: ()| {
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(ctx.instance_id())
            .or_insert_with(Instant::now);
        async move { Ok::<_, OrchestrationError>(()) }
    });
    let bench = Bench::open(config, config.settings(&[])?, reg).await?;
    let foreign = bench.foreign_client().await?;
    let span = Span::begin(&bench);
    let mut samples = Vec::new();
    for i in 0..n {
        tokio::time::sleep(config.pickup_gap).await;
        let id = InstanceId::new(format!("pickup-{i:04}"))?;
        let options = StartOptions {
            instance_id: Some(id.clone()),
            ..StartOptions::default()
        };
        foreign
            .start_with("Mark", (), options)
            .await
            .with_context(|| format!("cannot start {id}"))?;
        let sent = Instant::now();
        let deadline = sent + TIMEOUT;
        let ran = loop {
            let at = marks
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
                .copied();
            if let Some(at) = at {
                break at;
            }
            if Instant::now() > deadline {
                bail!("{id} was never picked up");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let waited = ran.saturating_duration_since(sent);
        eprintln!("pickup {}/{n}: {} ms", i + 1, waited.as_millis());
        samples.push(waited);
    }
    let m = span.end();
    bench.close().await;
    let poll = config.settings(&[])?.max_queue_polling_interval;
    let record = m
        .record("pickup", config, n, n)
        .latencies(
            "start call from a second hub handle returned to the first turn running",
            &samples,
        )
        .extra("gap_seconds", config.pickup_gap.as_secs_f64())
        .extra("max_queue_polling_interval_s", poll.as_secs_f64())
        .settings(config.changed_settings(&[]));
    // The original's worst case is its 30 s polling interval; half of it is the goal.
    let met = record.max_ms.is_some_and(|p| p <= 15_000.0);
    Ok(vec![record.target(
        "worst pickup <= 15 s (original: up to 30 s)",
        met,
    )])
}
