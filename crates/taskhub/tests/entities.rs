//! The entity end-to-end and critical-section suites on every backend of
//! `taskhub_backends::BACKENDS`, one test per suite and backend (`sqlite::…`, `azure::…`, …):
//! signals and calls, one sender's requests applied in send order and once whatever order the
//! queue delivers them in (Azure queues are not FIFO), critical sections. An entity batch that
//! sends messages commits in one transaction on SQLite and PostgreSQL, in two steps on Azure
//! (no transactions): the torn-checkpoint case runs there. Azure and PostgreSQL need their
//! services: `scripts/with-azurite.sh scripts/with-postgres.sh cargo test -p taskhub --test
//! entities`; without `TASKHUB_TEST_AZURE_CONNECTION_STRING` or `TASKHUB_TEST_POSTGRES_URL`
//! that backend's tests fail, saying how to run them.
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

taskhub_test_support::backend_matrix!(
    [every]
    entities_work_end_to_end,
    one_senders_requests_apply_in_order_once,
    critical_sections,
);

async fn entities_work_end_to_end(backend: Backend) {
    let store = TestStore::fresh(backend, "entities-api").await;
    commit_model_matches_the_suites(backend, store.store.atomic_checkpoints());
    api_suite::everything(store.store.clone()).await;
}

/// An entity batch commits in one transaction where the store says its checkpoints are atomic,
/// in steps otherwise: a backend whose hubs processes share and that commits in steps lists
/// the torn-batch suite (`torn` below), and one that is atomic does not (it cannot tear).
fn commit_model_matches_the_suites(backend: Backend, atomic: bool) {
    let torn = taskhub_backends::PROCESS_SUITES
        .iter()
        .any(|(name, suites)| *name == backend.name() && suites.contains(&"torn_entities"));
    let shared = taskhub_backends::testing::test_hub(backend.name()).shared;
    assert!(
        !(atomic && torn),
        "{backend}: atomic checkpoints cannot tear, yet it lists torn_entities"
    );
    assert!(
        atomic || torn || !shared,
        "{backend} commits entity batches in steps: its registration line lists torn_entities"
    );
}

/// One sender's requests, delivered out of order and twice, are applied in send order, once.
async fn one_senders_requests_apply_in_order_once(backend: Backend) {
    let store = TestStore::fresh(backend, "entities-order").await;
    order_suite::out_of_order_and_twice(store.store.clone()).await;
}

async fn critical_sections(backend: Backend) {
    let store = TestStore::fresh(backend, "entities-locks").await;
    locks_suite::sections(store.store.clone()).await;
}

/// Entity checkpoints torn after the steps that matter for a two-step commit (the messages
/// sent but the row not written; the row written but the consumed messages not deleted):
/// every operation still applied once. On the backends that commit in steps (memory's own
/// torn cases: `entity_scenarios/faults.rs`).
mod torn {
    use taskhub_storage::faults::{FaultPlan, TearAfter};

    use crate::backends::{Backend, TestStore};
    use crate::faults_suite;

    taskhub_test_support::backend_matrix!(
        [in torn_entities]
        torn_entity_checkpoints_apply_each_operation_once
    );

    async fn torn_entity_checkpoints_apply_each_operation_once(backend: Backend) {
        for step in [TearAfter::OutboundSent, TearAfter::InstanceWritten] {
            let store = TestStore::fresh(backend, "entities-faults").await;
            let plan = (0..10u64).fold(FaultPlan::none(), |plan, k| {
                plan.tear_checkpoint(1 + 3 * k, step)
            });
            faults_suite::run(
                store.store.clone(),
                plan,
                &format!("{backend}, torn after step {}", step.step()),
            )
            .await;
        }
    }
}
