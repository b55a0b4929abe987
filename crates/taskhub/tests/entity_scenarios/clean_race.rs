//! Clean-up of empty entities never deletes an entity that changed after the clean-up read it:
//! a signal applied between the read and the delete survives (the delete is conditional on
//! the row's ETag, `InstanceStore::delete_instance_if`).

use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, Op, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{ManualClock, TaskHubStore};

/// How long the clean-up's delete is held (on a manual clock: until the test advances it).
const HOLD: Duration = Duration::from_secs(60);

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Counter", |ctx: &mut EntityContext| {
        let mut value: i64 = ctx.get_state_or_default()?;
        match ctx.operation_name() {
            "add" => value += ctx.input::<i64>()?,
            "delete" => {
                ctx.delete_state();
                return Ok(value);
            }
            other => return Err(EntityError::new(format!("no operation '{other}'"))),
        }
        ctx.set_state(&value)?;
        Ok(value)
    });
    reg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_applied_between_the_read_and_the_delete_survives_clean_up() {
    // The store's delays wait on this clock; the hub runs on the system clock.
    let hold = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let plan = FaultPlan::none()
        .delay(Trigger::nth_of(Op::DeleteInstance, 1), HOLD)
        .delay(Trigger::nth_of(Op::DeleteInstanceIf, 1), HOLD);
    let backend = memory_store();
    let faulty = Arc::new(FaultyStore::new(backend, Arc::new(hold.clone()), plan));
    let store: Arc<dyn TaskHubStore> = faulty.clone();
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = EntityId::new("Counter", "raced").unwrap();

    // An empty entity: it had state, which was deleted; its row stays until clean-up.
    client.signal_entity(&id, "add", &1i64).await.unwrap();
    client.delete_entity(&id).await.unwrap();
    wait::until_async(
        "the entity to be empty and idle",
        || async {
            client
                .get_entity(&id)
                .await
                .unwrap()
                .is_some_and(|e| e.state.is_none() && e.locked_by.is_none() && e.queued == 0)
        },
        || async { client.get_entity(&id).await.unwrap() },
    )
    .await;

    // The clean-up reads the row, decides it is empty, and is held at its delete.
    let cleaner = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .clean_entities(&CleanEntities {
                    min_idle: Duration::ZERO,
                    ..CleanEntities::default()
                })
                .await
        })
    };
    let faults = faulty.faults();
    wait::until(
        "the clean-up to reach its delete",
        || faults.calls(Op::DeleteInstance) + faults.calls(Op::DeleteInstanceIf) == 1,
        || faults.counts(),
    )
    .await;

    // Meanwhile a signal is applied: the entity has state again.
    client.signal_entity(&id, "add", &5i64).await.unwrap();
    wait::until_async(
        "the signal to be applied",
        || async { client.read_entity_state::<i64>(&id).await.unwrap() == Some(5) },
        || async { client.get_entity(&id).await.unwrap() },
    )
    .await;

    hold.advance(HOLD);
    let done = cleaner.await.unwrap().unwrap();
    assert_eq!(
        done.removed, 0,
        "the changed entity is not counted as removed"
    );
    assert_eq!(
        client.read_entity_state::<i64>(&id).await.unwrap(),
        Some(5),
        "the signal applied after the clean-up's read survives it"
    );
    // A later clean-up still removes an entity that is empty again.
    client.delete_entity(&id).await.unwrap();
    wait::until_async(
        "the entity to be empty again",
        || async {
            client
                .get_entity(&id)
                .await
                .unwrap()
                .is_some_and(|e| e.state.is_none() && e.queued == 0)
        },
        || async { client.get_entity(&id).await.unwrap() },
    )
    .await;
    let again = client
        .clean_entities(&CleanEntities {
            min_idle: Duration::ZERO,
            ..CleanEntities::default()
        })
        .await
        .unwrap();
    assert_eq!(again.removed, 1);
    assert!(client.get_entity(&id).await.unwrap().is_none());
    worker.shutdown().await;
}
