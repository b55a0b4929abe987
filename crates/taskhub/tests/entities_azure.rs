//! The entity end-to-end and critical-section tests on Azure Storage (Azurite): an entity batch
//! that sends messages commits in two steps there (no transactions). Run with
//! `scripts/with-azurite.sh cargo test -p taskhub --test entities_azure`; without
//! `TASKHUB_TEST_AZURE_CONNECTION_STRING` the tests fail, saying how to run them.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "common/entities_api_suite.rs"]
mod api_suite;
#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/entities_locks_suite.rs"]
mod locks_suite;

use backends::{Backend, TestStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_work_end_to_end_on_azure() {
    let store = TestStore::fresh(Backend::Azure, "entities-azure").await;
    api_suite::everything(store.store.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_sections_on_azure() {
    let store = TestStore::fresh(Backend::Azure, "entities-azure-locks").await;
    locks_suite::sections(store.store.clone()).await;
}
