//! Smoke test: the DESIGN §1 example runs to completion.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]
mod common;
use common::*;
use taskhub_core::*;

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for city in ["Tokyo", "Seattle", "London"] {
        out.push(ctx.call_activity("SayHello", city).await?);
    }
    Ok(out)
}

#[test]
fn hello_cities_runs_to_completion() {
    let mut reg = Registry::new();
    reg.orchestration("HelloCities", hello_cities)
        .activity("SayHello", say_hello);
    let mut d = Driver::new(reg, "hello").activity("SayHello", |input, _| {
        let city: String = serde_json::from_str(input).unwrap();
        Ok(payload(format!("Hello {city}!")))
    });
    d.start("HelloCities", ());
    d.run_one_by_one();
    assert_eq!(
        d.output::<Vec<String>>(),
        vec!["Hello Tokyo!", "Hello Seattle!", "Hello London!"]
    );
    assert_eq!(d.session.status(), OrchestrationStatus::Completed);
}
