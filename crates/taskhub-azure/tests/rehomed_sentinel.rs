//! Lease epochs count per partition: the history sentinel's "last writer epoch" fences only a
//! writer of the same partition. An instance re-homed by a partition-count change is written
//! next under another partition's lease, whose epoch may well be lower; that writer must
//! commit (it was fenced before, which stranded the instance and stopped the partition: the
//! bug `taskhub/tests/azure_resize.rs` found). Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test rehomed_sentinel`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::sync::Arc;

use taskhub_azure::AzureStore;
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, ETag, HistoryStore, HistoryWrite, LeaseFence, ManualClock,
    PartitionRow, PartitionStore, StorageError,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

fn raised(i: u64) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(START.as_millis() + i),
        EventKind::EventRaised {
            name: format!("e{i}"),
            input: Payload::from_json("1".to_owned()).unwrap(),
        },
    )
}

fn write(expected: Option<ETag>, fence: LeaseFence, event: u64) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new("moved").unwrap(),
        fence: Some(fence),
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: expected.clone(),
            new_execution: expected.is_none(),
            events: vec![raised(event)],
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// Sets partition `p`'s lease row to `epoch` (owned by `w<epoch>`).
async fn take(s: &AzureStore, p: u32, epoch: u64) {
    let row = s
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.partition == p)
        .unwrap();
    let next = PartitionRow {
        epoch,
        owner: Some(format!("w{epoch}")),
        ..row.clone()
    };
    s.put_partition(&next, row.etag.as_ref()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rehomed_instance_is_written_under_its_new_partitions_lower_epoch() {
    let s = common::create_store(common::account(), Arc::new(ManualClock::new(START))).await;
    s.create_hub(4, START).await.unwrap();
    take(&s, 3, 5).await;
    take(&s, 0, 1).await;
    let id = InstanceId::new("moved").unwrap();

    // The instance lives on partition 3 (epoch 5) ...
    let old = LeaseFence {
        partition: 3,
        epoch: 5,
    };
    s.checkpoint(write(None, old, 0)).await.unwrap();
    let loaded = s.load_history(&id).await.unwrap().unwrap();

    // ... and is re-homed to partition 0, whose lease is at epoch 1.
    let new = LeaseFence {
        partition: 0,
        epoch: 1,
    };
    s.checkpoint(write(Some(loaded.etag.clone()), new, 1))
        .await
        .expect("the new home's owner commits: epoch 1 of partition 0 is not older than epoch 5 of partition 3");
    let after = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(after.events, vec![raised(0), raised(1)]);

    // Within one partition the sentinel still fences an older epoch: partition 0 moves to
    // epoch 2, a writer there commits, and a writer still under epoch 1 (its read of the row
    // made stale on purpose by writing the row back) is fenced.
    take(&s, 0, 2).await;
    s.checkpoint(write(
        Some(after.etag.clone()),
        LeaseFence {
            partition: 0,
            epoch: 2,
        },
        2,
    ))
    .await
    .unwrap();
    let latest = s.load_history(&id).await.unwrap().unwrap();
    take(&s, 0, 1).await;
    let stale = s.checkpoint(write(Some(latest.etag.clone()), new, 3)).await;
    assert!(
        matches!(
            stale,
            Err(StorageError::Fenced {
                partition: 0,
                attempted: 1,
                current: 2
            })
        ),
        "expected Fenced by the sentinel, got {stale:?}"
    );
    assert_eq!(
        s.load_history(&id).await.unwrap().unwrap().events.len(),
        3,
        "the fenced write changed nothing"
    );
}
