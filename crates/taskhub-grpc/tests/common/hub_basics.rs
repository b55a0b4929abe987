//! What the gRPC and the HTTP tests' hubs have in common (taskhub-http's tests include this
//! file): a hub name of their own on the services' backends, and the orchestrations, activity
//! and entity both registries start with.

use taskhub::{
    ActivityContext, ActivityError, EntityContext, EntityError, OrchestrationContext,
    OrchestrationError, Registry,
};

/// A hub name no other test uses, for the services' backends: `prefix`, the process ID, a
/// counter and the clock's nanoseconds.
pub fn unique_hub_name(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}{}x{n}x{nanos}", std::process::id())
}

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

/// Registers on `reg`:
/// * `Hello`: `SayHello` for Tokyo, Seattle and London, in sequence;
/// * `Echo`: returns its input, shown as custom status too;
/// * `Waiter`: custom status `waiting` (each registry's text), then returns the data of the
///   event `Go`;
/// * `Fails`: runs the activity `Boom`, which each registry adds with its own failure;
/// * `SayHello` (activity): `Hello {city}!`;
/// * `Counter` (entity, [`counter`]).
pub fn register<'r>(reg: &'r mut Registry, waiting: &'static str) -> &'r mut Registry {
    reg.orchestration(
        "Hello",
        |ctx: OrchestrationContext, _: serde_json::Value| async move {
            let mut out = Vec::new();
            for city in ["Tokyo", "Seattle", "London"] {
                out.push(ctx.call_activity::<_, String>("SayHello", city).await?);
            }
            Ok::<_, OrchestrationError>(out)
        },
    )
    .orchestration(
        "Echo",
        |ctx: OrchestrationContext, input: serde_json::Value| async move {
            ctx.set_custom_status(&input)?;
            Ok::<_, OrchestrationError>(input)
        },
    )
    .orchestration(
        "Waiter",
        move |ctx: OrchestrationContext, _: serde_json::Value| async move {
            ctx.set_custom_status(waiting)?;
            let v: serde_json::Value = ctx.wait_for_event("Go").await?;
            Ok::<_, OrchestrationError>(v)
        },
    )
    .orchestration(
        "Fails",
        |ctx: OrchestrationContext, _: serde_json::Value| async move {
            ctx.call_activity::<_, ()>("Boom", ()).await?;
            Ok::<_, OrchestrationError>(())
        },
    )
    .activity("SayHello", say_hello)
    .entity("Counter", counter)
}

/// The entity `Counter`: `add` a number, `get`; both answer the value.
pub fn counter(ctx: &mut EntityContext) -> Result<i64, EntityError> {
    let mut value: i64 = ctx.get_state_or_default()?;
    match ctx.operation_name() {
        "add" => value += ctx.input::<i64>()?,
        "get" => {}
        other => return Err(EntityError::new(format!("no operation '{other}'"))),
    }
    ctx.set_state(&value)?;
    Ok(value)
}
