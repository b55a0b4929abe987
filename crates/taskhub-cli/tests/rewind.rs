//! `taskhub instances rewind ID [--reason R]`: a Failed instance is Running again at once and
//! completes, keeping what succeeded (its first activity is not run again); the history shows
//! `ExecutionRewound` with the reason and the rewound task; an unknown instance, an invalid ID
//! and an instance that is not Failed are one `error:` line and exit code 1.
//!
//! The orchestrations run on a worker in this process (their `Ship` activity fails until the
//! test opens a gate); the commands are the `taskhub` binary on the same SQLite file.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::{
    ActivityContext, ActivityError, OrchestrationContext, OrchestrationError, Registry, Settings,
    TaskHub, Worker,
};

/// Shipping works once the test opens it.
static SHIPPING_OPEN: AtomicBool = AtomicBool::new(false);
/// How many times `Charge` ran.
static CHARGES: AtomicU32 = AtomicU32::new(0);

/// `Order`: `Charge` (succeeds), then `Ship` (fails until the gate is open). `Hold`: waits for
/// an event `go`.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.orchestration(
        "Order",
        |ctx: OrchestrationContext, _: serde_json::Value| async move {
            let charged: String = ctx.call_activity("Charge", ()).await?;
            let shipped: String = ctx.call_activity("Ship", ()).await?;
            Ok::<_, OrchestrationError>(format!("{charged}, {shipped}"))
        },
    )
    .orchestration(
        "Hold",
        |ctx: OrchestrationContext, _: serde_json::Value| async move {
            let v: serde_json::Value = ctx.wait_for_event("go").await?;
            Ok::<_, OrchestrationError>(v)
        },
    )
    .activity("Charge", |_c: ActivityContext, _: ()| async move {
        let n = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
        Ok::<_, ActivityError>(format!("charged (run {n})"))
    })
    .activity("Ship", |_c: ActivityContext, _: ()| async move {
        if SHIPPING_OPEN.load(Ordering::SeqCst) {
            Ok("shipped".to_owned())
        } else {
            Err(ActivityError::new("the shipping service is down"))
        }
    });
    r
}

async fn open_hub(dir: &TempDir) -> TaskHub {
    let store =
        taskhub_sqlite::SqliteStore::open(taskhub_sqlite::SqliteOptions::new(dir.db())).unwrap();
    let settings = Settings {
        max_queue_polling_interval: Duration::from_millis(100),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    };
    TaskHub::open(Arc::new(store), settings).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_runs_a_failed_instance_again_keeping_what_succeeded() {
    let dir = TempDir::new("cli-rewind");
    let hub = open_hub(&dir).await;
    let worker = Worker::start(&hub, registry()).await.unwrap();
    ok(&dir, &["instances", "start", "Order", "--id", "o-1"]);
    ok(&dir, &["instances", "start", "Hold", "--id", "h-1"]);
    wait_status(&dir, "o-1", "Failed");
    wait_status(&dir, "h-1", "Running");
    let shown = json(&dir, &["instances", "show", "o-1", "--json"]);
    assert!(
        shown["failure"]
            .to_string()
            .contains("shipping service is down"),
        "{shown}"
    );
    assert_eq!(CHARGES.load(Ordering::SeqCst), 1);

    // Refusals: one `error:` line, exit 1, nothing changed.
    let err = fails(&dir, &["instances", "rewind", "nobody"], 1);
    assert!(err.contains("error: instance 'nobody' not found"), "{err}");
    let err = fails(&dir, &["instances", "rewind", "a/b"], 1);
    assert!(err.starts_with("error: ") && err.contains("a/b"), "{err}");
    let err = fails(&dir, &["instances", "rewind", "h-1", "--reason", "no"], 1);
    assert!(
        err.contains("instance 'h-1' is Running: cannot rewind"),
        "{err}"
    );
    assert_eq!(status(&dir, "h-1"), "Running");

    // With no worker running, the rewound instance is seen Running at once.
    worker.shutdown().await;
    SHIPPING_OPEN.store(true, Ordering::SeqCst);
    let out = ok(
        &dir,
        &["instances", "rewind", "o-1", "--reason", "shipping is back"],
    );
    assert_eq!(out.trim(), "rewind requested for o-1");
    let shown = json(&dir, &["instances", "show", "o-1", "--json"]);
    assert_eq!(shown["status"], "Running", "{shown}");
    assert!(shown["failure"].is_null(), "{shown}");

    // A worker replays it: `Charge` is kept (not run again), `Ship` runs again and succeeds.
    let worker = Worker::start(&hub, registry()).await.unwrap();
    wait_status(&dir, "o-1", "Completed");
    let shown = json(&dir, &["instances", "show", "o-1", "--json"]);
    assert_eq!(shown["output"], "charged (run 1), shipped", "{shown}");
    assert_eq!(CHARGES.load(Ordering::SeqCst), 1);

    // The history: the rewind with its reason and the rewound task (`Ship`, #1); the failure
    // is gone.
    let history = ok(&dir, &["instances", "history", "o-1"]);
    assert!(
        history.contains("ExecutionRewound: shipping is back (rewound tasks #1)"),
        "{history}"
    );
    assert!(!history.contains("TaskFailed"), "{history}");
    assert!(!history.contains("ExecutionFailed"), "{history}");
    assert!(history.contains("TaskCompleted #1"), "{history}");
    let events = json(&dir, &["instances", "history", "o-1", "--json"]);
    let rewound: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["description"]
                .as_str()
                .unwrap()
                .starts_with("ExecutionRewound")
        })
        .collect();
    assert_eq!(rewound.len(), 1, "{events}");

    // Completed now: not rewindable.
    let err = fails(&dir, &["instances", "rewind", "o-1"], 1);
    assert!(
        err.contains("instance 'o-1' is Completed: cannot rewind"),
        "{err}"
    );
    worker.shutdown().await;
}
