//! The storage conformance suite on SQLite: every case on a fresh temporary database file.

use std::sync::Arc;

use taskhub_sqlite::SqliteStore;
use taskhub_storage::{ManualClock, TaskHubStore};

#[expect(
    clippy::expect_used,
    reason = "a store that cannot be opened fails the case"
)]
async fn make_store(clock: ManualClock) -> Arc<dyn TaskHubStore> {
    Arc::new(SqliteStore::open_temp(Arc::new(clock)).expect("open a temporary sqlite database"))
}

taskhub_storage::conformance_tests!(make_store);
