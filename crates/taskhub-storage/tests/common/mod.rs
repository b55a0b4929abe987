//! What the fault tests of the memory backend (`memory_faults.rs`) and of the `FaultyStore`
//! wrapper (`faulty_store.rs`) share: the queues, a manual clock, and a first turn's
//! checkpoint of one instance.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test support: not every test binary uses every helper"
)]

use std::time::Duration;

use taskhub_core::{
    EventKind, ExecutionId, HistoryEvent, InstanceId, OrchestrationStatus, Payload, Timestamp,
};
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{
    CheckpointRequest, Expect, HistoryWrite, InstanceRow, ManualClock, NewQueueMessage,
    OutboundMessage, QueueName, QueueStore, StorageError,
};

pub const WORK: QueueName = QueueName::WorkItems;
pub const CONTROL: QueueName = QueueName::Control(0);
pub const VISIBILITY: Duration = Duration::from_secs(30);

pub fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_millis(1_700_000_000_000))
}

pub fn unavailable() -> StorageError {
    StorageError::Unavailable("injected".to_owned())
}

pub fn msg(body: &str) -> NewQueueMessage {
    NewQueueMessage {
        body: body.to_owned(),
        delay: Duration::ZERO,
    }
}

pub async fn length(s: &MemoryStore, q: QueueName) -> u64 {
    s.stats(q).await.unwrap().length
}

/// A Running row of `Torn` instance `id`.
pub fn instance_row(id: &str) -> InstanceRow {
    running_row(id, "Torn")
}

/// A Running row of instance `id` of orchestration `name`, execution `e1`, on partition 0.
pub fn running_row(id: &str, name: &str) -> InstanceRow {
    InstanceRow {
        status: OrchestrationStatus::Running,
        ..InstanceRow::new(
            InstanceId::new(id).unwrap(),
            name,
            ExecutionId::new("e1").unwrap(),
            Timestamp::EPOCH,
        )
    }
}

pub fn started() -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::EPOCH,
        EventKind::ExecutionStarted {
            name: "Torn".to_owned(),
            version: None,
            input: Payload::null(),
            execution_id: ExecutionId::new("e1").unwrap(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
    )
}

/// A first turn of `id`: history, one work item, the instance row, and one consumed control
/// message (enqueued and dequeued here).
pub async fn first_turn(s: &MemoryStore, id: &str) -> CheckpointRequest {
    s.enqueue(CONTROL, vec![msg("start")]).await.unwrap();
    let consumed = s.dequeue(CONTROL, 1, VISIBILITY).await.unwrap();
    CheckpointRequest {
        instance_id: InstanceId::new(id).unwrap(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: vec![started()],
        }),
        instance: Some((instance_row(id), Expect::Absent)),
        outbound: vec![OutboundMessage {
            claim: None,
            queue: WORK,
            message: msg("activity"),
        }],
        consumed: vec![(CONTROL, consumed[0].receipt.clone())],
    }
}
