//! Shared helpers for runtime tests.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    unused_imports,
    missing_docs,
    clippy::unwrap_used,
    reason = "test support: not every test binary uses every helper"
)]

pub mod child;
pub mod skewed_clock;

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::{SystemClock, TaskHubStore};
pub use taskhub_test_support::{wait, TempDir};

pub fn fast_settings() -> Settings {
    Settings {
        max_queue_polling_interval: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    }
}

pub fn sqlite_store(dir: &std::path::Path) -> Arc<dyn TaskHubStore> {
    let opts = taskhub_sqlite::SqliteOptions::new(dir.join("hub.db"))
        .with_clock(Arc::new(SystemClock::new()));
    Arc::new(taskhub_sqlite::SqliteStore::open(opts).unwrap())
}

/// Under paused tokio time: waits until `f` holds; `bound` (tokio time) runs out only once the
/// runtime has been idle without `f` holding.
pub async fn until_paused(what: &str, bound: Duration, mut f: impl FnMut() -> bool) {
    tokio::time::timeout(bound, async {
        while !f() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// The status of an instance that exists.
pub async fn status_of(client: &TaskHubClient, id: &InstanceId) -> OrchestrationStatus {
    client
        .get_status(id, StatusOptions::default())
        .await
        .unwrap()
        .unwrap()
        .status()
}
