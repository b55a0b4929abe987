//! The README's whole program, end to end: open a task hub in a SQLite file, start a worker,
//! start an instance and wait for its output.
//!
//! Run: `cargo run --example hello`

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_examples::{wrong, TempDir};
use taskhub_sqlite::{SqliteOptions, SqliteStore};

/// The activity, named with its input and output types: callers and the registered function
/// must agree with them, or the program does not compile.
const SAY_HELLO: ActivityRef<String, String> = ActivityRef::new("SayHello");
/// The orchestration: no input, one greeting per city out.
const HELLO_CITIES: OrchestrationRef<(), Vec<String>> = OrchestrationRef::new("HelloCities");

async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
    Ok(format!("Hello {city}!"))
}

async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
    let mut out = Vec::new();
    for city in ["Tokyo", "Seattle", "London"] {
        out.push(ctx.call(SAY_HELLO, city.to_owned()).await?);
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The store and the hub. A real program would keep its file, e.g. `taskhub.db`.
    let dir = TempDir::new("hello")?;
    let store = SqliteStore::open(SqliteOptions::new(dir.path().join("taskhub.db")))?;
    let hub = TaskHub::open(Arc::new(store), Settings::default()).await?;

    // 2. A worker that runs the orchestration and the activity.
    let mut registry = Registry::new();
    registry
        .register_orchestration(HELLO_CITIES, hello_cities)
        .register_activity(SAY_HELLO, say_hello);
    let worker = Worker::start(&hub, registry).await?;

    // 3. Start an instance and wait for its output, typed by the descriptor.
    let instance = hub.client().start_typed(&HELLO_CITIES, ()).await?;
    println!("started {}", instance.id());
    let greetings: Vec<String> = instance
        .wait_for_completion(Duration::from_secs(60))
        .await?;
    for greeting in &greetings {
        println!("{greeting}");
    }

    // 4. Stop the worker gracefully: in-flight work finishes, partitions are released.
    worker.shutdown().await;

    let expected = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"];
    if greetings != expected {
        return Err(wrong(format!("{greetings:?}, expected {expected:?}")));
    }
    println!("ok");
    Ok(())
}
