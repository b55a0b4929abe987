//! End-to-end: every orchestration feature on the SQLite backend, with a real worker.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
use std::time::Duration;

use common::*;
use taskhub::*;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_cities_on_sqlite() {
    let dir = TempDir::new("hello");
    let hub = TaskHub::open(sqlite_store(&dir.0), fast_settings())
        .await
        .unwrap();
    let mut reg = Registry::new();
    reg.orchestration("HelloCities", hello_cities)
        .activity("SayHello", say_hello);
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = client.start("HelloCities", ()).await.unwrap();
    let status = client
        .wait_for_completion(&id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(
        status.status(),
        OrchestrationStatus::Completed,
        "{status:?}"
    );
    assert_eq!(
        status.output::<Vec<String>>().unwrap().unwrap(),
        vec!["Hello Tokyo!", "Hello Seattle!", "Hello London!"]
    );
    worker.shutdown().await;
}
