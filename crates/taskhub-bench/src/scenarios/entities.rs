//! `entities`: durable entities. Three records, each with its target (issue 12):
//!
//! * `entities-one`: one entity signalled by 16 concurrent client senders (20,000 operations):
//!   operations/s from the first signal to the last one applied (>= 5,000/s);
//! * `entities-many`: 1,000 entities signalled round-robin by 16 senders (50,000 operations):
//!   operations/s (>= 10,000/s);
//! * `entities-call`: an orchestration calling an entity 500 times in sequence under no other
//!   load: the round trip, measured in the entity as the time between consecutive calls (the
//!   response's way back, the orchestration's turn, the next request's way there): p50 <= 2 ms.

use std::time::Duration;

use anyhow::{bail, Context as _};
use taskhub::{
    EntityContext, EntityError, EntityId, OrchestrationContext, OrchestrationError, Registry,
};
use tokio::task::JoinSet;

use crate::harness::{wait_one, Bench, Config};
use crate::progress;
use crate::report::Record;
use crate::workloads::Stamps;

use super::{Span, TIMEOUT};

const SENDERS: u64 = 16;

fn registry(stamps: &Stamps) -> Registry {
    let mut r = Registry::new();
    let stamps = stamps.clone();
    r.entity("Counter", |ctx: &mut EntityContext| {
        let mut value: i64 = ctx.get_state_or_default()?;
        value += ctx.input::<i64>()?;
        ctx.set_state(&value)?;
        Ok(value)
    })
    .entity("Ping", move |ctx: &mut EntityContext| {
        stamps.push_now();
        let n: u64 = ctx.get_state_or_default()?;
        ctx.set_state(&(n + 1))?;
        Ok::<_, EntityError>(n + 1)
    })
    .orchestration("CallLoop", |ctx: OrchestrationContext, n: u64| async move {
        let id = EntityId::new("Ping", "p")?;
        let mut last = 0u64;
        for _ in 0..n {
            last = ctx.call_entity(&id, "ping", &()).await?;
        }
        Ok::<_, OrchestrationError>(last)
    });
    r
}

pub async fn run(config: &Config) -> anyhow::Result<Vec<Record>> {
    Ok(vec![
        signals(config, "entities-one", config.count(20_000), 1, 5_000.0).await?,
        signals(
            config,
            "entities-many",
            config.count(50_000),
            1_000,
            10_000.0,
        )
        .await?,
        calls(config).await?,
    ])
}

/// `n` signals from 16 concurrent senders, round-robin over `entities` counters.
async fn signals(
    config: &Config,
    scenario: &str,
    n: u64,
    entities: u64,
    target: f64,
) -> anyhow::Result<Record> {
    let entities = entities.min(n).max(1);
    let bench = Bench::open(config, config.settings(&[])?, registry(&Stamps::default())).await?;
    let ids = (0..entities)
        .map(|k| EntityId::new("Counter", format!("c{k:05}")))
        .collect::<Result<Vec<_>, _>>()?;
    let span = Span::begin(&bench);
    let work = async {
        let mut senders = JoinSet::new();
        for s in 0..SENDERS {
            let client = bench.client.clone();
            let ids = ids.clone();
            senders.spawn(async move {
                let mut i = s;
                while i < n {
                    let id = &ids[usize::try_from(i % entities)?];
                    client.signal_entity(id, "add", &1i64).await?;
                    i += SENDERS;
                }
                anyhow::Ok(())
            });
        }
        while let Some(joined) = senders.join_next().await {
            joined.context("a sender panicked")??;
        }
        let started = std::time::Instant::now();
        while bench.stats().entity_operations < n {
            if started.elapsed() > TIMEOUT {
                bail!("{scenario}: the operations were not applied in time");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        anyhow::Ok(())
    };
    progress::drive(scenario, n, work, || bench.stats().entity_operations).await?;
    let m = span.end();
    let stats = bench.stats();
    let mut total = 0i64;
    for id in &ids {
        total += bench
            .client
            .read_entity_state::<i64>(id)
            .await?
            .unwrap_or(0);
    }
    bench.close().await;
    if u64::try_from(total)? != n {
        bail!("{scenario}: the counters hold {total}, not {n}");
    }
    let record = m
        .record(scenario, config, n, n)
        .rate("operations/s")
        .extra("entities", entities)
        .extra("senders", SENDERS)
        .extra("batches", stats.entity_batches)
        .settings(config.changed_settings(&[]));
    let met = record.throughput.is_some_and(|t| t >= target);
    Ok(record.target(&format!(">= {target} operations/s"), met))
}

/// An orchestration calling an entity `n` times in sequence.
async fn calls(config: &Config) -> anyhow::Result<Record> {
    let n = config.count(500).max(2);
    let stamps = Stamps::default();
    let bench = Bench::open(config, config.settings(&[])?, registry(&stamps)).await?;
    let span = Span::begin(&bench);
    let work = async {
        let id = bench.client.start("CallLoop", n).await?;
        let status = wait_one(&bench.client, &id, TIMEOUT).await?;
        anyhow::Ok(status)
    };
    let status = progress::drive("entities-call", n, work, || stamps.len() as u64).await?;
    let m = span.end();
    bench.close().await;
    if status.output::<u64>()? != Some(n) {
        bail!("entities-call: the orchestration saw the wrong answers");
    }
    let samples = crate::stats::gaps(&stamps.take());
    let record = m
        .record("entities-call", config, n, n)
        .rate("calls/s")
        .latencies(
            "call_entity round trip (between consecutive calls)",
            &samples,
        )
        .settings(config.changed_settings(&[]));
    let met = record.p50_ms.is_some_and(|p| p <= 2.0);
    Ok(record.target("call_entity p50 <= 2 ms", met))
}
