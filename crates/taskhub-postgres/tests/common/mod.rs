//! What the PostgreSQL tests share: the test server (`scripts/with-postgres.sh`) and fresh
//! hubs on it, each in a schema of its own.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use taskhub_postgres::{Create, PostgresOptions, PostgresStore};
use taskhub_storage::ManualClock;

/// The test server's options; fails, saying how to run the tests, when it is not set.
pub fn options() -> PostgresOptions {
    let url = taskhub_test_support::env::postgres_url("cargo test -p taskhub-postgres");
    let mut options = PostgresOptions::new(url);
    options.pool_size = 4;
    options
}

/// A hub name no other test (of this or another process) uses.
pub fn fresh_hub_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    #[allow(
        clippy::disallowed_methods,
        reason = "a unique name, not a decision about time"
    )]
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}{}x{}x{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh, empty hub (the clock is not used: the server keeps time).
#[allow(
    clippy::expect_used,
    reason = "a store that cannot be opened fails the test"
)]
pub async fn fresh_store(_clock: ManualClock) -> Arc<PostgresStore> {
    let store = PostgresStore::open(&options(), &fresh_hub_name("conf"), Create::IfMissing)
        .await
        .expect("open a fresh PostgreSQL hub");
    Arc::new(store)
}
