//! An offline partition whose owner no longer holds it is released, not kept owned forever.
//!
//! Found by `scripts/loop-tests.sh` (run 29 of 50, `multi_worker.rs`
//! `partition_count_raised_and_lowered_during_a_run`): under load a worker's renewals failed for
//! a lease interval, so it stopped processing two retiring partitions (lease expired); the
//! partitions were then taken offline (retired). Nobody claims an offline partition, and the
//! worker no longer held it, so no one ever cleared its owner: the rows stayed "owned" by a
//! worker that did not hold them, and the retirement never finished. The same happens to a
//! partition taken offline by an operator while its owner's lease lapses, or after its owner is
//! killed.
//!
//! Deterministic: one lease manager on the memory backend with a `ManualClock`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::common::queues::partition_row;
use taskhub::lease::{LeaseConfig, LeaseManager, PartitionHost, Released};
use taskhub_core::Timestamp;
use taskhub_storage::memory::{FaultPlan, MemoryStore};
use taskhub_storage::{Clock, ManualClock, PartitionStore, StorageError};

#[derive(Default)]
struct Host {
    held: BTreeMap<u32, u64>,
}

impl PartitionHost for Host {
    fn acquired(&mut self, partition: u32, epoch: u64) {
        self.held.insert(partition, epoch);
    }
    fn stop_dequeuing(&mut self, _: u32) {}
    fn in_flight(&self, _: u32) -> usize {
        0
    }
    fn released(&mut self, partition: u32, _: Released) {
        self.held.remove(&partition);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_offline_partition_left_by_an_expired_owner_is_released() {
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let store = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
    store.create_hub(4, clock.now()).await.unwrap();
    let config = LeaseConfig {
        worker: "w1".into(),
        lease_interval: Duration::from_secs(30),
        renew_interval: Duration::from_secs(10),
        acquire_interval: Duration::from_secs(10),
        max_partitions: 16,
        drain_timeout: Duration::from_secs(20),
    };
    let mut manager = LeaseManager::new(store.clone(), Arc::new(clock.clone()), config.clone());
    let mut host = Host::default();
    manager.tick(&mut host).await;
    assert_eq!(host.held.len(), 4, "a lone worker claims every partition");

    // The store stops answering for longer than a lease interval: the worker stops processing
    // its partitions (their rows still name it).
    store.faults().set_plan(FaultPlan::none().random(
        1,
        1.0,
        StorageError::Unavailable("injected".into()),
    ));
    clock.advance(config.lease_interval + Duration::from_secs(1));
    manager.tick(&mut host).await;
    assert!(host.held.is_empty(), "unrenewed leases are dropped");
    store.faults().set_plan(FaultPlan::none());

    // Partition 3 is taken offline meanwhile (a retirement or an operator).
    let row = partition_row(store.as_ref(), 3).await;
    assert_eq!(row.owner.as_deref(), Some("w1"));
    let offline = taskhub_storage::PartitionRow {
        offline: true,
        etag: None,
        ..row.clone()
    };
    store
        .put_partition(&offline, row.etag.as_ref())
        .await
        .unwrap();

    // Passes go on for a few lease intervals: the offline row ends up unowned (and is not
    // claimed); the others are claimed again.
    for _ in 0..20 {
        clock.advance(config.renew_interval / 2);
        manager.tick(&mut host).await;
    }
    let rows = store.list_partitions().await.unwrap();
    let row3 = rows.iter().find(|r| r.partition == 3).unwrap();
    assert!(
        row3.offline && row3.owner.is_none(),
        "offline partition still owned by a worker that does not hold it: {row3:?}"
    );
    assert!(row3.epoch > row.epoch, "the release fences the old owner");
    assert!(
        !host.held.contains_key(&3),
        "an offline partition was claimed"
    );
    assert_eq!(
        host.held.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2],
        "{rows:?}"
    );
}
