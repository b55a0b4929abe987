//! Critical sections (`ctx.lock_entities`): orchestrations locking overlapping sets of entities
//! in opposite orders all finish (locks are taken in one global order: no deadlock), nothing
//! else runs on a locked entity inside a section (other senders' requests wait and run after
//! it), calls to entities outside the lock set are refused, a section ends when its
//! orchestration returns or is terminated inside it, and clean-up leaves a live holder's
//! locks alone. Memory and SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
#[path = "common/entities_locks_suite.rs"]
mod suite;
use std::sync::Arc;

use common::*;
use suite::sections;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::SystemClock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_sections_in_memory() {
    sections(Arc::new(MemoryStore::new(Arc::new(SystemClock::new())))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_sections_on_sqlite() {
    let dir = TempDir::new("entities-locks");
    sections(sqlite_store(&dir.0)).await;
}
