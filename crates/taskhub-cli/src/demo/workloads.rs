//! The demo's orchestrations and activities, and the [`registry`] that `taskhub demo` and
//! `taskhub worker` run.
//!
//! | orchestration | input | output |
//! |---|---|---|
//! | `HelloCities` | `null` | three greetings from three sequential `SayHello` calls |
//! | `FanOutFanIn` | `n` | the sum of `Square(1..=n)`, all scheduled at once |
//! | `Approval` | `{"timeout_ms": ..}` | `"approved by X"` on an `approval` event, or `"timed out"` |
//! | `Monitor` | `{"generation": 0, "generations": 5, "interval_ms": 200}` | a summary after the last generation (continue-as-new between) |
//! | `SumOfSquares` | `[1, 2, ..]` | the sum of one `SquareChild` sub-orchestration per number |
//! | `FlakyPayment` | any string | `"succeeded on attempt 3"` (`Flaky` fails on attempts 1 and 2) |

use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::{
    when_all, when_any2, ActivityContext, ActivityError, Either, EntityContext, EntityError,
    EntityId, OrchestrationContext, OrchestrationError, Registry, RetryPolicy,
};

/// Every demo orchestration and activity.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.orchestration("HelloCities", hello_cities)
        .orchestration("FanOutFanIn", fan_out_fan_in)
        .orchestration("Approval", approval)
        .orchestration("Monitor", monitor)
        .orchestration("SumOfSquares", sum_of_squares)
        .orchestration("SquareChild", square_child)
        .orchestration("FlakyPayment", flaky_payment)
        .orchestration("EntityFanOut", entity_fan_out)
        .entity("DemoCounter", demo_counter)
        .activity("SayHello", say_hello)
        .activity("Square", square)
        .activity("CheckStatus", check_status)
        .activity("Flaky", flaky);
    r
}

/// A counter entity: `add` a number, `get` the total.
fn demo_counter(ctx: &mut EntityContext) -> Result<i64, EntityError> {
    let mut total: i64 = ctx.get_state_or_default()?;
    match ctx.operation_name() {
        "add" => total += ctx.input::<i64>()?,
        "get" => {}
        other => {
            return Err(EntityError::new(format!(
                "DemoCounter has no operation '{other}'"
            )))
        }
    }
    ctx.set_state(&total)?;
    Ok(total)
}

/// Hammers a counter entity with `n` concurrent calls (`add` 1..=n, a fan-out), then reads
/// its total: n(n+1)/2 if every operation was applied once.
async fn entity_fan_out(ctx: OrchestrationContext, n: i64) -> Result<i64, OrchestrationError> {
    let counter = EntityId::new("DemoCounter", ctx.instance_id().as_str())?;
    ctx.set_custom_status(&format!("adding 1..={n} to {counter}"))?;
    let adds = (1..=n).map(|i| ctx.call_entity::<_, i64>(&counter, "add", &i));
    for added in when_all(adds).await {
        added?;
    }
    Ok(ctx.call_entity(&counter, "get", &()).await?)
}

/// The cities `HelloCities` greets, in order.
pub const CITIES: [&str; 3] = ["Tokyo", "Seattle", "London"];

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for city in CITIES {
        out.push(ctx.call_activity("SayHello", city).await?);
    }
    Ok(out)
}

async fn square(_ctx: ActivityContext, n: u64) -> Result<u64, ActivityError> {
    n.checked_mul(n)
        .ok_or_else(|| ActivityError::new(format!("{n} squared overflows")).non_retryable())
}

async fn fan_out_fan_in(ctx: OrchestrationContext, n: u64) -> Result<u64, OrchestrationError> {
    ctx.set_custom_status(&format!("squaring 1..={n}"))?;
    let tasks = (1..=n).map(|i| ctx.call_activity::<u64, u64>("Square", i));
    let mut sum = 0u64;
    for result in when_all(tasks).await {
        sum = sum.saturating_add(result?);
    }
    Ok(sum)
}

/// The input of `Approval`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// How long to wait for the `approval` event.
    pub timeout_ms: u64,
}

/// The data of the `approval` event.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalEvent {
    /// Who approved.
    pub approver: String,
}

/// The name of the event `Approval` waits for.
pub const APPROVAL_EVENT: &str = "approval";

async fn approval(
    ctx: OrchestrationContext,
    request: ApprovalRequest,
) -> Result<String, OrchestrationError> {
    ctx.set_custom_status("waiting for approval")?;
    let timeout = ctx.sleep(Duration::from_millis(request.timeout_ms));
    let event = ctx.wait_for_event::<ApprovalEvent>(APPROVAL_EVENT);
    match when_any2(timeout, event).await {
        Either::Left(()) => {
            ctx.set_custom_status("timed out")?;
            Ok("timed out".to_owned())
        }
        Either::Right(event) => {
            let event = event?;
            ctx.set_custom_status("approved")?;
            Ok(format!("approved by {}", event.approver))
        }
    }
}

/// The input of `Monitor`, carried from generation to generation by continue-as-new.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MonitorState {
    /// This generation (0 first).
    pub generation: u32,
    /// How many generations to run.
    pub generations: u32,
    /// The pause between checks.
    pub interval_ms: u64,
}

async fn check_status(_ctx: ActivityContext, generation: u32) -> Result<String, ActivityError> {
    Ok(format!("check {generation}: healthy"))
}

async fn monitor(
    ctx: OrchestrationContext,
    state: MonitorState,
) -> Result<String, OrchestrationError> {
    let status: String = ctx.call_activity("CheckStatus", state.generation).await?;
    ctx.set_custom_status(&status)?;
    let next = state.generation + 1;
    if next >= state.generations {
        return Ok(format!("{next} checks, last: {status}"));
    }
    ctx.sleep(Duration::from_millis(state.interval_ms)).await;
    ctx.continue_as_new(MonitorState {
        generation: next,
        ..state
    })
    .await
}

async fn square_child(ctx: OrchestrationContext, n: u64) -> Result<u64, OrchestrationError> {
    Ok(ctx.call_activity("Square", n).await?)
}

async fn sum_of_squares(
    ctx: OrchestrationContext,
    numbers: Vec<u64>,
) -> Result<u64, OrchestrationError> {
    let children = numbers
        .iter()
        .map(|n| ctx.call_sub_orchestration::<u64, u64>("SquareChild", *n));
    let mut sum = 0u64;
    for result in when_all(children).await {
        sum = sum.saturating_add(result?);
    }
    Ok(sum)
}

/// The attempt on which `Flaky` first succeeds.
pub const FLAKY_SUCCEEDS_ON: u32 = 3;

async fn flaky(ctx: ActivityContext, what: String) -> Result<String, ActivityError> {
    let attempt = ctx.attempt();
    if attempt < FLAKY_SUCCEEDS_ON {
        return Err(ActivityError::new(format!(
            "{what}: transient failure on attempt {attempt}"
        )));
    }
    Ok(format!("succeeded on attempt {attempt}"))
}

async fn flaky_payment(
    ctx: OrchestrationContext,
    what: String,
) -> Result<String, OrchestrationError> {
    let policy = RetryPolicy::new(5, Duration::from_millis(100)).with_backoff_coefficient(2.0);
    Ok(ctx.call_activity_with_retry("Flaky", what, policy).await?)
}
