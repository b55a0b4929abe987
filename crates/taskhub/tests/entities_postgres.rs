//! The entity end-to-end and critical-section tests on PostgreSQL: an entity batch and the
//! messages it sends commit in one transaction there. Run with
//! `scripts/with-postgres.sh cargo test -p taskhub --test entities_postgres`; without
//! `TASKHUB_TEST_POSTGRES_URL` the tests fail, saying how to run them.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "common/entities_api_suite.rs"]
mod api_suite;
#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/entities_locks_suite.rs"]
mod locks_suite;
#[path = "common/entities_order_suite.rs"]
mod order_suite;

use backends::{Backend, TestStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_work_end_to_end_on_postgres() {
    let store = TestStore::fresh(Backend::Postgres, "entities-pg").await;
    assert!(store.store.atomic_checkpoints());
    api_suite::everything(store.store.clone()).await;
}

/// One sender's requests, delivered out of order and twice, are applied in send order, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_senders_requests_apply_in_order_once_on_postgres() {
    let store = TestStore::fresh(Backend::Postgres, "entities-pg-order").await;
    order_suite::out_of_order_and_twice(store.store.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_sections_on_postgres() {
    let store = TestStore::fresh(Backend::Postgres, "entities-pg-locks").await;
    locks_suite::sections(store.store.clone()).await;
}
