//! A worker and a client in separate processes, sharing one task hub in a SQLite file.
//!
//! Run: `cargo run --example worker_and_client`. It starts itself twice on a temporary
//! database, once as the worker and once as the client, checks the client's result, then stops
//! the worker and checks that it stopped cleanly. Or play both roles yourself, in two
//! terminals:
//!
//! ```text
//! cargo run --example worker_and_client -- worker taskhub.db   # runs until its stdin closes (Ctrl-D)
//! cargo run --example worker_and_client -- client taskhub.db   # starts an order, prints its total
//! ```
//!
//! Both processes share the typed descriptors below (in a real program: a crate both depend
//! on), so the client's input and output types are the worker's.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use taskhub::*;
use taskhub_examples::{wrong, TempDir};
use taskhub_sqlite::{SqliteOptions, SqliteStore};

/// An order: item names and quantities.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    lines: Vec<(String, u64)>,
}

/// The price of one line of an order, in cents.
const PRICE_LINE: ActivityRef<(String, u64), u64> = ActivityRef::new("PriceLine");
/// The total of an order, in cents: one `PriceLine` per line, all at once.
const ORDER_TOTAL: OrchestrationRef<Order, u64> = OrchestrationRef::new("OrderTotal");

async fn price_line(
    _ctx: ActivityContext,
    (item, quantity): (String, u64),
) -> Result<u64, ActivityError> {
    let unit = match item.as_str() {
        "apple" => 40,
        "bread" => 250,
        "cheese" => 600,
        other => return Err(ActivityError::new(format!("no price for '{other}'")).non_retryable()),
    };
    Ok(unit * quantity)
}

async fn order_total(ctx: OrchestrationContext, order: Order) -> Result<u64, OrchestrationError> {
    let lines = order
        .lines
        .into_iter()
        .map(|line| ctx.call(PRICE_LINE, line));
    let mut total = 0;
    for price in when_all(lines).await {
        total += price?;
    }
    Ok(total)
}

/// Opens the hub in `db`. Another process's messages are seen at the next poll, so both sides
/// poll idle queues at least every 100 ms here (the default backs off to 15 s).
async fn open_hub(db: &Path) -> Result<TaskHub, TaskhubError> {
    let store = SqliteStore::open(SqliteOptions::new(db))?;
    let settings = Settings {
        max_queue_polling_interval: Duration::from_millis(100),
        ..Settings::default()
    };
    TaskHub::open(Arc::new(store), settings).await
}

/// `worker DB`: runs the worker until standard input closes, then shuts down gracefully.
async fn worker(db: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let hub = open_hub(db).await?;
    let mut registry = Registry::new();
    registry
        .register_orchestration(ORDER_TOTAL, order_total)
        .register_activity(PRICE_LINE, price_line);
    let worker = Worker::start(&hub, registry).await?;
    println!("worker ready on {}", db.display());
    std::io::stdout().flush()?;
    // Wait for end of input on a blocking thread; the worker runs on the runtime meanwhile.
    tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()))
        .await??;
    let stats = worker.stats();
    worker.shutdown().await;
    println!(
        "worker stopped after {} turns and {} activities",
        stats.turns, stats.activities
    );
    Ok(())
}

/// `client DB`: starts an order, waits for its total, checks it.
async fn client(db: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let hub = open_hub(db).await?;
    let order = Order {
        lines: vec![
            ("apple".into(), 6),
            ("bread".into(), 1),
            ("cheese".into(), 2),
        ],
    };
    let instance = hub.client().start_typed(&ORDER_TOTAL, order).await?;
    println!("client started {}", instance.id());
    let total = instance
        .wait_for_completion(Duration::from_secs(120))
        .await?;
    println!("client: the order totals {total} cents");
    if total != 6 * 40 + 250 + 2 * 600 {
        return Err(wrong(format!("total {total}")));
    }
    Ok(())
}

/// No arguments: runs `worker` and `client` as child processes on a temporary database.
fn both() -> Result<(), Box<dyn std::error::Error>> {
    let dir = TempDir::new("worker-and-client")?;
    let db = dir.path().join("taskhub.db");
    let me = std::env::current_exe()?;

    let mut worker = Command::new(&me)
        .arg("worker")
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut worker_out = BufReader::new(worker.stdout.take().ok_or("no worker stdout")?);
    let mut ready = String::new();
    worker_out.read_line(&mut ready)?;
    print!("{ready}");
    if !ready.contains("ready") {
        let _ = worker.kill();
        return Err(wrong(format!("the worker did not start: {ready:?}")));
    }

    let client = Command::new(&me).arg("client").arg(&db).status();

    // Closing the worker's standard input asks it to shut down.
    drop(worker.stdin.take());
    let mut rest = String::new();
    while worker_out.read_line(&mut rest)? > 0 {}
    print!("{rest}");
    let worker_exit = worker.wait()?;

    let client = client?;
    if !client.success() {
        return Err(wrong(format!("the client exited with {client}")));
    }
    if !worker_exit.success() {
        return Err(wrong(format!("the worker exited with {worker_exit}")));
    }
    println!("ok");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => both(),
        [role @ ("worker" | "client"), db] => match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime.block_on(async {
                if role == "worker" {
                    worker(Path::new(db)).await
                } else {
                    client(Path::new(db)).await
                }
            }),
            Err(e) => Err(e.into()),
        },
        _ => Err("usage: worker_and_client [worker DB | client DB]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
