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
#[path = "common/entities_faults_suite.rs"]
mod faults_suite;
#[path = "common/entities_locks_suite.rs"]
mod locks_suite;
#[path = "common/entities_order_suite.rs"]
mod order_suite;

use backends::{Backend, TestStore};
use taskhub_storage::faults::{FaultPlan, TearAfter};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_work_end_to_end_on_azure() {
    let store = TestStore::fresh(Backend::Azure, "entities-azure").await;
    api_suite::everything(store.store.clone()).await;
}

/// Azure queues are not FIFO: one sender's requests, delivered out of order and twice, are
/// applied in send order, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_senders_requests_apply_in_order_once_on_azure() {
    let store = TestStore::fresh(Backend::Azure, "entities-azure-order").await;
    order_suite::out_of_order_and_twice(store.store.clone()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_sections_on_azure() {
    let store = TestStore::fresh(Backend::Azure, "entities-azure-locks").await;
    locks_suite::sections(store.store.clone()).await;
}

/// Entity checkpoints torn after the steps that matter for the two-step commit (the messages
/// sent but the row not written; the row written but the consumed messages not deleted):
/// every operation still applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_entity_checkpoints_apply_each_operation_once_on_azure() {
    for step in [TearAfter::OutboundSent, TearAfter::InstanceWritten] {
        let store = TestStore::fresh(Backend::Azure, "entities-azure-faults").await;
        let plan = (0..10u64).fold(FaultPlan::none(), |plan, k| {
            plan.tear_checkpoint(1 + 3 * k, step)
        });
        faults_suite::run(
            store.store.clone(),
            plan,
            &format!("Azure, torn after step {}", step.step()),
        )
        .await;
    }
}
