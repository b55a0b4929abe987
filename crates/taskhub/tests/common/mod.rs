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
