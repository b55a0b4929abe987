//! The orchestrations and activities the scenarios run.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use taskhub::{
    when_all, ActivityContext, ActivityError, OrchestrationContext, OrchestrationError, Registry,
};

/// When each `Stamp` activity ran, in order (shared with the scenario).
#[derive(Debug, Clone, Default)]
pub struct Stamps(Arc<Mutex<Vec<Instant>>>);

impl Stamps {
    fn push(&self, at: Instant) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(at);
    }

    /// Records now.
    pub fn push_now(&self) {
        self.push(Instant::now());
    }

    /// The instants recorded so far.
    pub fn take(&self) -> Vec<Instant> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many were recorded.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Input of `Sequential`: `n` activities in sequence, `Stamp` or `Noop`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SequentialInput {
    /// How many activities.
    pub n: u64,
    /// Record each activity's start time (`Stamp` instead of `Noop`).
    pub stamp: bool,
}

/// The registry of every bench workload; `Stamp` activities record into `stamps`.
pub fn registry(stamps: &Stamps) -> Registry {
    let mut r = Registry::new();
    let stamps = stamps.clone();
    r.activity("Noop", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x)
    })
    .activity("Stamp", move |_c: ActivityContext, x: u64| {
        stamps.push(Instant::now());
        async move { Ok::<_, ActivityError>(x) }
    })
    .orchestration("Sequential", sequential)
    .orchestration("FanOut", fan_out)
    .orchestration("Hello5", |ctx: OrchestrationContext, _: ()| async move {
        let mut sum = 0u64;
        for i in 0..5u64 {
            sum += ctx.call_activity::<_, u64>("Noop", i).await?;
        }
        Ok::<_, OrchestrationError>(sum)
    })
    .orchestration("One", |ctx: OrchestrationContext, _: ()| async move {
        Ok::<u64, OrchestrationError>(ctx.call_activity("Noop", 1u64).await?)
    })
    .orchestration("Events", |ctx: OrchestrationContext, n: u64| async move {
        let mut sum = 0u64;
        for _ in 0..n {
            sum += ctx.wait_for_event::<u64>("e").await?;
        }
        Ok::<_, OrchestrationError>(sum)
    })
    .orchestration("Timer", timer)
    .orchestration("Idle", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("go").await?;
        Ok::<_, OrchestrationError>(())
    });
    r
}

async fn sequential(
    ctx: OrchestrationContext,
    input: SequentialInput,
) -> Result<u64, OrchestrationError> {
    let name = if input.stamp { "Stamp" } else { "Noop" };
    let mut sum = 0u64;
    for i in 0..input.n {
        sum = sum.wrapping_add(ctx.call_activity::<_, u64>(name, i).await?);
    }
    Ok(sum)
}

async fn fan_out(ctx: OrchestrationContext, n: u64) -> Result<u64, OrchestrationError> {
    let results = when_all((0..n).map(|i| ctx.call_activity::<_, u64>("Noop", i))).await;
    let mut sum = 0u64;
    for r in results {
        sum = sum.wrapping_add(r?);
    }
    Ok(sum)
}

/// Sleeps `ms` on a durable timer and returns how late the turn after it ran, in ms (the
/// turn's recorded time minus the timer's due time).
async fn timer(ctx: OrchestrationContext, ms: u64) -> Result<i64, OrchestrationError> {
    let due = ctx.now() + Duration::from_millis(ms);
    ctx.create_timer(due).await;
    let late = match ctx.now().duration_since(due) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(early) => -i64::try_from(early.duration().as_millis()).unwrap_or(i64::MAX),
    };
    Ok(late)
}
