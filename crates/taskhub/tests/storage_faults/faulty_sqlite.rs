//! `FaultyStore` around SQLite, whose checkpoint is one transaction: a planned tear has no
//! step to stop at, so the checkpoint commits whole and no tear is recorded; failures still
//! apply.

use crate::common;
use std::sync::Arc;
use std::time::Duration;

use taskhub::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::faults::{FaultPlan, InjectedFault, Op, TearAfter, Trigger};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, NewQueueMessage,
    OutboundMessage, PartitionStore, QueueName, QueueStore, StorageError, SystemClock,
};

fn request(id: &str) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new(id).unwrap(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: vec![HistoryEvent::new(
                Timestamp::EPOCH,
                EventKind::ExecutionStarted {
                    name: "N".to_owned(),
                    version: None,
                    input: Payload::null(),
                    execution_id: ExecutionId::new("e1").unwrap(),
                    parent: None,
                    scheduled_start: None,
                    applied_event_ids: Vec::new(),
                    tags: Default::default(),
                },
            )],
        }),
        instance: None,
        outbound: vec![OutboundMessage {
            claim: None,
            queue: QueueName::WorkItems,
            message: NewQueueMessage {
                body: "work".to_owned(),
                delay: Duration::ZERO,
            },
        }],
        consumed: Vec::new(),
    }
}

#[tokio::test]
async fn a_transactional_checkpoint_is_never_torn_but_can_fail() {
    let dir = common::TempDir::new("faulty-sqlite");
    let store = FaultyStore::new(
        common::sqlite_store(&dir.0),
        Arc::new(SystemClock::new()),
        FaultPlan::none()
            .tear_checkpoint(1, TearAfter::OutboundSent)
            .fail(
                Trigger::nth_of(Op::Checkpoint, 2),
                StorageError::Unavailable("x".into()),
            ),
    );
    store.create_hub(4, Timestamp::EPOCH).await.unwrap();
    store.checkpoint(request("whole")).await.unwrap();
    let id = InstanceId::new("whole").unwrap();
    let history = store.load_history(&id).await.unwrap().unwrap();
    assert!(history.pending_outbox.is_empty(), "committed whole");
    assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 1);
    assert_eq!(
        store.checkpoint(request("failed")).await.unwrap_err(),
        StorageError::Unavailable("x".into())
    );
    let injected: Vec<InjectedFault> = store
        .faults()
        .injected()
        .into_iter()
        .map(|i| i.fault)
        .collect();
    assert_eq!(
        injected,
        [InjectedFault::Failed(StorageError::Unavailable("x".into()))],
        "no tear recorded"
    );
}
