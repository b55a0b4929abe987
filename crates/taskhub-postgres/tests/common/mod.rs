//! What the PostgreSQL tests share: the test server (`scripts/with-postgres.sh`) and fresh
//! hubs on it, each in a schema of its own.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use taskhub_postgres::{Create, PostgresOptions, PostgresStore};
use taskhub_storage::ManualClock;

/// A message with `body`, visible at once.
pub fn message(body: &str) -> taskhub_storage::NewQueueMessage {
    taskhub_storage::NewQueueMessage {
        body: body.to_owned(),
        delay: std::time::Duration::ZERO,
    }
}

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

/// A fresh hub of one partition whose lease `owner` holds at epoch 1.
#[allow(
    clippy::expect_used,
    reason = "a hub that cannot be set up fails the test"
)]
pub async fn leased_store(owner: &str) -> Arc<PostgresStore> {
    use taskhub_core::Timestamp;
    use taskhub_storage::{PartitionRow, PartitionStore};
    let store = fresh_store(taskhub_storage::conformance::start_clock()).await;
    store
        .create_hub(1, Timestamp::from_millis(1))
        .await
        .expect("create_hub");
    let row = store
        .list_partitions()
        .await
        .expect("list_partitions")
        .remove(0);
    let leased = PartitionRow {
        owner: Some(owner.into()),
        epoch: 1,
        ..row.clone()
    };
    store
        .put_partition(&leased, row.etag.as_ref())
        .await
        .expect("take the lease");
    store
}

/// A checkpoint of partition 0 at `epoch` that appends one event to `instance`'s history
/// (its first, making the execution, when `expected` is `None`) and sends one work item.
#[allow(clippy::expect_used, reason = "constant, valid IDs and JSON")]
pub fn append_request(
    instance: &str,
    expected: Option<taskhub_storage::ETag>,
    epoch: u64,
) -> taskhub_storage::CheckpointRequest {
    use std::time::Duration;
    use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
    use taskhub_storage::{
        CheckpointRequest, HistoryWrite, LeaseFence, NewQueueMessage, OutboundMessage, QueueName,
    };
    CheckpointRequest {
        instance_id: InstanceId::new(instance).expect("instance ID"),
        fence: Some(LeaseFence {
            partition: 0,
            epoch,
        }),
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").expect("execution ID"),
            new_execution: expected.is_none(),
            expected,
            events: vec![HistoryEvent::new(
                Timestamp::from_millis(1),
                EventKind::EventRaised {
                    name: "x".into(),
                    input: Payload::from_json("null").expect("JSON"),
                },
            )],
        }),
        instance: None,
        outbound: vec![OutboundMessage::new(
            QueueName::WorkItems,
            NewQueueMessage {
                body: instance.to_owned(),
                delay: Duration::ZERO,
            },
        )],
        consumed: Vec::new(),
    }
}
