//! Durable entities on a worker, past the suite every backend runs (`entities.rs`): a batch of
//! queued operations commits as one checkpoint; entity IDs are validated and reserved.

use std::sync::Arc;

use crate::api_suite::registry;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::instrumented::Instrumented;
use taskhub_storage::{Operation, SystemClock, TaskHubStore};

fn counter(key: &str) -> EntityId {
    EntityId::new("Counter", key).unwrap()
}

async fn wait_state(client: &TaskHubClient, id: &EntityId, want: i64) {
    wait::until_async(
        &format!("{id} to reach {want}"),
        || async { client.read_entity_state::<i64>(id).await.unwrap() == Some(want) },
        || async { client.read_entity_state::<i64>(id).await.unwrap() },
    )
    .await;
}

/// Operations queued before any worker runs are applied in a few batches, each one
/// checkpoint, not one checkpoint per operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_operations_commit_in_batches() {
    let dir = TempDir::new("entities-batch");
    let store = Instrumented::new(
        taskhub_sqlite::SqliteStore::open(
            taskhub_sqlite::SqliteOptions::new(dir.0.join("hub.db"))
                .with_clock(Arc::new(SystemClock::new())),
        )
        .unwrap(),
    );
    let metrics = store.metrics();
    let store: Arc<dyn TaskHubStore> = Arc::new(store);
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open(store, settings).await.unwrap();
    let client = hub.client();
    let c = counter("batched");
    for _ in 0..300 {
        client.signal_entity(&c, "add", &1).await.unwrap();
    }
    let before = metrics.snapshot().calls(Operation::Checkpoint);
    let worker = Worker::start(&hub, registry()).await.unwrap();
    wait_state(&client, &c, 300i64).await;
    let checkpoints = metrics.snapshot().calls(Operation::Checkpoint) - before;
    let stats = worker.stats();
    assert_eq!(stats.entity_operations, 300);
    assert_eq!(
        stats.entity_batches, checkpoints,
        "one checkpoint per batch on SQLite"
    );
    assert!(
        checkpoints <= 300 / 16,
        "{checkpoints} checkpoints for 300 queued operations"
    );
    worker.shutdown().await;
}

#[tokio::test]
async fn entity_ids_are_validated_and_reserved() {
    assert!(matches!(
        EntityId::parse("Counter"),
        Err(CoreError::InvalidEntityId { .. })
    ));
    assert!(matches!(
        EntityId::new("Coun@ter", "k"),
        Err(CoreError::InvalidEntityId { .. })
    ));
    let hub = TaskHub::open(memory_store(), fast_settings())
        .await
        .unwrap();
    let started = hub
        .client()
        .start_with(
            "CallCounter",
            (),
            StartOptions {
                instance_id: Some(InstanceId::new("@Counter@x").unwrap()),
                ..StartOptions::default()
            },
        )
        .await;
    assert!(
        matches!(
            started,
            Err(TaskhubError::Invalid(CoreError::InvalidInstanceId { .. }))
        ),
        "{started:?}"
    );
    let listed = hub
        .client()
        .list_entities(&EntityQuery {
            name: Some("a@b".to_owned()),
            ..EntityQuery::default()
        })
        .await;
    assert!(
        matches!(listed, Err(TaskhubError::Invalid(_))),
        "{listed:?}"
    );
}
