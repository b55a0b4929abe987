//! Shared helpers for runtime tests.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    missing_docs,
    clippy::unwrap_used,
    reason = "test support"
)]

pub mod child;
pub mod wait;

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::{SystemClock, TaskHubStore};

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

pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("taskhub-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // A failing test leaves its directory (database, worker logs) for inspection.
        if std::thread::panicking() {
            eprintln!("kept for inspection: {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
