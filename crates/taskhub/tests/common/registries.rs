//! Registries that several tests run.

use taskhub::*;

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
