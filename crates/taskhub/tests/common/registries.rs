//! Registries that several tests run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use taskhub::*;

/// Registers the activity `Inc(x)`: `x + 1`.
pub fn add_inc(reg: &mut Registry) {
    reg.activity("Inc", |_ctx: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x + 1)
    });
}

/// Registers the activity `Inc(x)`: `x + 1`, counting its runs in `runs`.
pub fn add_counted_inc(reg: &mut Registry, runs: Arc<AtomicUsize>) {
    reg.activity("Inc", move |_ctx: ActivityContext, x: u64| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ActivityError>(x + 1)
        }
    });
}

/// Registers the orchestration `Seq(n)`: calls `Inc` `n` times in a row, from 0; returns `n`.
pub fn add_seq(reg: &mut Registry) {
    reg.orchestration("Seq", |ctx: OrchestrationContext, n: u64| async move {
        let mut x = 0u64;
        for _ in 0..n {
            x = ctx.call_activity("Inc", x).await?;
        }
        Ok::<_, OrchestrationError>(x)
    });
}

/// `DoubleThenWait(x)`: calls the activity `Double` on `x`, then waits for the event `extra`;
/// returns the sum.
pub fn double_then_wait_registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Double", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x * 2)
    });
    reg.orchestration(
        "DoubleThenWait",
        |ctx: OrchestrationContext, x: u64| async move {
            let doubled: u64 = ctx.call_activity("Double", x).await?;
            let extra: u64 = ctx.wait_for_event("extra").await?;
            Ok::<_, OrchestrationError>(doubled + extra)
        },
    );
    reg
}

/// Registers the orchestration `name(x)`: returns what the activity `activity` returns on `x`.
pub fn add_call(reg: &mut Registry, name: &'static str, activity: &'static str) {
    reg.orchestration(name, move |ctx: OrchestrationContext, x: u64| async move {
        let y: u64 = ctx.call_activity(activity, x).await?;
        Ok::<_, OrchestrationError>(y)
    });
}

/// Registers the orchestration `name(n)`: calls the activity `activity` on each of `0..n` at
/// once; returns the sum of the results.
pub fn add_fan_out(reg: &mut Registry, name: &'static str, activity: &'static str) {
    reg.orchestration(name, move |ctx: OrchestrationContext, n: u64| async move {
        let mut sum = 0u64;
        for r in when_all((0..n).map(|i| ctx.call_activity::<_, u64>(activity, i))).await {
            sum += r?;
        }
        Ok::<_, OrchestrationError>(sum)
    });
}

/// Registers the entity `Cell`: each operation adds one to its state and returns the new
/// state.
pub fn add_cell(reg: &mut Registry) {
    reg.entity("Cell", |ctx: &mut EntityContext| {
        let n: u64 = ctx.get_state_or_default()?;
        ctx.set_state(&(n + 1))?;
        Ok(n + 1)
    });
}

/// `Countdown(n)`: sets its custom status to `at {n}` and continues as new with `n + 1` until
/// `n` reaches 3; returns `n * 100`.
pub fn countdown_registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration(
        "Countdown",
        |ctx: OrchestrationContext, n: u32| async move {
            ctx.set_custom_status(&format!("at {n}"))?;
            if n >= 3 {
                return Ok(n * 100);
            }
            ctx.continue_as_new(n + 1).await
        },
    );
    reg
}
