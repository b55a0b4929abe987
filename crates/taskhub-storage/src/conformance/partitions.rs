//! Cases for [`PartitionStore`](crate::PartitionStore): the hub and its lease rows.

use std::collections::HashSet;

use super::fixtures::{assert_conflict, assert_invalid};
use super::fixtures::{at, partition_row, START};
use crate::clock::ManualClock;
use crate::error::StorageError;
use crate::history::ETag;
use crate::partitions::{HubInfo, PartitionRow};
use crate::store::TaskHubStore;

async fn create(s: &dyn TaskHubStore, count: u32) -> HubInfo {
    s.create_hub(count, START).await.expect("create_hub")
}

async fn rows(s: &dyn TaskHubStore) -> Vec<PartitionRow> {
    s.list_partitions().await.expect("list_partitions")
}

fn owned_by(row: &PartitionRow, owner: &str, epoch: u64) -> PartitionRow {
    PartitionRow {
        owner: Some(owner.to_owned()),
        epoch,
        ..row.clone()
    }
}

/// `hub_info` is `None` before the hub is created (the `hub_info` docs).
pub async fn hub_info_is_none_before_create(s: &dyn TaskHubStore, _clock: &ManualClock) {
    assert_eq!(s.hub_info().await.expect("hub_info"), None);
    assert!(rows(s).await.is_empty(), "no partition rows before the hub");
}

/// `create_hub` MUST create the hub with `partition_count` partition rows (epoch 0, no owner)
/// if it does not exist.
pub async fn create_hub_creates_partition_rows_at_epoch_zero_without_owner(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let info = create(s, 4).await;
    let expected = HubInfo {
        partition_count: 4,
        created_at: START,
        prohibited_workers: Vec::new(),
    };
    assert_eq!(info, expected);
    assert_eq!(s.hub_info().await.expect("hub_info"), Some(expected));
    let rows = rows(s).await;
    let numbers: Vec<u32> = rows.iter().map(|r| r.partition).collect();
    assert_eq!(numbers, [0, 1, 2, 3]);
    for r in &rows {
        assert_eq!(r.epoch, 0, "partition {}", r.partition);
        assert_eq!(r.owner, None, "partition {}", r.partition);
        assert_eq!(r.next_owner, None, "partition {}", r.partition);
        assert!(
            !r.draining && !r.retiring && !r.offline,
            "partition {} starts live: {r:?}",
            r.partition
        );
        assert!(r.etag.is_some(), "partition {} has an ETag", r.partition);
    }
}

/// `create_hub` MUST leave an existing hub unchanged and return what is stored.
pub async fn create_hub_when_hub_exists_keeps_and_returns_stored(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let first = create(s, 4).await;
    let row0 = partition_row(s, 0).await;
    s.put_partition(&owned_by(&row0, "worker-1", 1), row0.etag.as_ref())
        .await
        .expect("put_partition");
    let before = rows(s).await;
    let second = s.create_hub(8, at(60_000)).await.expect("create_hub");
    assert_eq!(second, first, "the stored hub is returned");
    assert_eq!(s.hub_info().await.expect("hub_info"), Some(first));
    assert_eq!(rows(s).await, before, "partition rows are untouched");
}

/// `create_hub` MUST reject a partition count of 0 or over 16 with `InvalidArgument`.
pub async fn create_hub_rejects_partition_count_zero_or_over_16(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for count in [0, 17, u32::MAX] {
        let result = s.create_hub(count, START).await;
        assert_invalid(&result, &format!("create_hub({count})"));
    }
    assert_eq!(
        s.hub_info().await.expect("hub_info"),
        None,
        "nothing created"
    );
    create(s, 16).await;
    assert_eq!(rows(s).await.len(), 16, "16 partitions are allowed");
    let result = s.create_hub(0, START).await;
    assert_invalid(&result, "create_hub(0) on an existing hub");
}

/// `list_partitions` MUST return every row with its current ETag, ordered by partition.
pub async fn list_partitions_returns_every_row_in_order_with_current_etag(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    create(s, 5).await;
    let mut written = Vec::new();
    for p in [3, 1] {
        let row = partition_row(s, p).await;
        let etag = s
            .put_partition(&owned_by(&row, "w", 1), row.etag.as_ref())
            .await
            .expect("put_partition");
        written.push((p, etag));
    }
    let listed = rows(s).await;
    let numbers: Vec<u32> = listed.iter().map(|r| r.partition).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4]);
    for (p, etag) in written {
        assert_eq!(
            listed[p as usize].etag.as_ref(),
            Some(&etag),
            "partition {p} is listed with the ETag of its last write"
        );
    }
    for r in &listed {
        s.put_partition(&owned_by(r, "x", r.epoch + 1), r.etag.as_ref())
            .await
            .expect("the listed ETag of every row is current");
    }
}

/// `put_partition` MUST fail with `Conflict` unless `expected` matches the stored ETag.
pub async fn put_partition_conflicts_unless_expected_etag_matches(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    create(s, 2).await;
    let row = partition_row(s, 0).await;
    let e0 = row.etag.clone();
    let e1 = s
        .put_partition(&owned_by(&row, "first", 1), e0.as_ref())
        .await
        .expect("put_partition");
    for stale in [e0, Some(ETag("made-up".to_owned()))] {
        let result = s
            .put_partition(&owned_by(&row, "second", 1), stale.as_ref())
            .await;
        assert_conflict(&result, &format!("put with ETag {stale:?}"));
    }
    let stored = partition_row(s, 0).await;
    assert_eq!(
        stored.owner.as_deref(),
        Some("first"),
        "the losers changed nothing"
    );
    assert_eq!(stored.etag.as_ref(), Some(&e1));
    s.put_partition(&owned_by(&row, "second", 2), Some(&e1))
        .await
        .expect("a put with the current ETag succeeds");
}

/// `put_partition` with `expected` of `None` MUST fail with `Conflict` if the row exists (and
/// creates it if it does not).
pub async fn put_partition_without_expected_etag_requires_missing_row(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    create(s, 2).await;
    let row0 = partition_row(s, 0).await;
    let result = s.put_partition(&owned_by(&row0, "w", 1), None).await;
    assert_conflict(&result, "put of an existing row with no ETag");
    let new_row = PartitionRow {
        partition: 5,
        etag: None,
        ..row0.clone()
    };
    let etag = s
        .put_partition(&new_row, None)
        .await
        .expect("creating a missing row");
    let stored = partition_row(s, 5).await;
    assert_eq!(stored.etag, Some(etag));
    let again = s.put_partition(&new_row, None).await;
    assert_conflict(&again, "creating it a second time");
}

/// `put_partition` MUST return a new, different ETag.
pub async fn put_partition_returns_new_different_etag(s: &dyn TaskHubStore, _clock: &ManualClock) {
    create(s, 1).await;
    let mut row = partition_row(s, 0).await;
    let mut seen: HashSet<ETag> = row.etag.iter().cloned().collect();
    for epoch in 1..=5 {
        let etag = s
            .put_partition(&owned_by(&row, "w", epoch), row.etag.as_ref())
            .await
            .expect("put_partition");
        assert!(
            seen.insert(etag.clone()),
            "ETag {etag:?} was returned before"
        );
        row = partition_row(s, 0).await;
        assert_eq!(row.etag, Some(etag), "the listed ETag is the returned one");
        assert_eq!(row.epoch, epoch);
    }
}

/// `set_partition_count` MUST change the count stored in the hub info.
pub async fn set_partition_count_changes_hub_info(s: &dyn TaskHubStore, _clock: &ManualClock) {
    create(s, 4).await;
    for count in [8, 2, 16, 1] {
        s.set_partition_count(count)
            .await
            .expect("set_partition_count");
        let info = s
            .hub_info()
            .await
            .expect("hub_info")
            .expect("the hub exists");
        assert_eq!(info.partition_count, count);
        assert_eq!(info.created_at, START, "only the count changes");
    }
}

/// `set_prohibited_workers` MUST replace the list `hub_info` returns, and MUST fail with
/// `NotFound` if the hub does not exist.
pub async fn set_prohibited_workers_replaces_the_list(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let missing = s.set_prohibited_workers(vec!["w".to_owned()]).await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "no hub yet: {missing:?}"
    );
    create(s, 2).await;
    for list in [
        vec!["a".to_owned(), "b \"quoted\"".to_owned()],
        vec![],
        vec!["c".to_owned()],
    ] {
        s.set_prohibited_workers(list.clone())
            .await
            .expect("set_prohibited_workers");
        let info = s
            .hub_info()
            .await
            .expect("hub_info")
            .expect("the hub exists");
        assert_eq!(info.prohibited_workers, list);
        assert_eq!(info.partition_count, 2, "only the list changes");
    }
}

/// Every field of a partition row is stored and read back unchanged (the `PartitionRow`
/// docs; the ETag is the store's).
pub async fn partition_row_round_trips_every_field(s: &dyn TaskHubStore, _clock: &ManualClock) {
    create(s, 3).await;
    let row = partition_row(s, 2).await;
    let full = PartitionRow {
        partition: 2,
        owner: Some("worker-\u{e9}:42".to_owned()),
        next_owner: Some("worker-b".to_owned()),
        epoch: u64::from(u32::MAX) + 7,
        draining: true,
        retiring: true,
        offline: true,
        updated_at: at(123_456),
        turns: u64::from(u32::MAX) + 11,
        doorbell: u64::from(u32::MAX) + 13,
        etag: Some(ETag("ignored on write".to_owned())),
    };
    let etag = s
        .put_partition(&full, row.etag.as_ref())
        .await
        .expect("put_partition");
    let stored = partition_row(s, 2).await;
    assert_eq!(
        stored,
        PartitionRow {
            etag: Some(etag),
            ..full
        }
    );
}

/// A row's work-item doorbell MUST start at zero, and a ring written in a renewal batch (or a
/// claim) MUST be what the next `lease_table` read shows, under a new ETag; a write that
/// carries the row over MUST keep it.
pub async fn doorbell_rung_in_a_renewal_is_seen_by_the_next_lease_read(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    create(s, 2).await;
    let table = s.lease_table().await.expect("lease_table");
    assert!(
        table.rows.iter().all(|r| r.doorbell == 0),
        "new rows have not been rung: {:?}",
        table.rows
    );
    let row = table.rows[1].clone();
    let claimed = owned_by(&row, "w", 1);
    let etag = s
        .put_partition(&claimed, row.etag.as_ref())
        .await
        .expect("claim");
    let rung = PartitionRow {
        doorbell: claimed.doorbell + 1,
        ..claimed.clone()
    };
    let results = s
        .renew_partitions(&[(rung, etag)])
        .await
        .expect("renew_partitions");
    let new_etag = match results.as_slice() {
        [Ok(e)] => e.clone(),
        other => panic!("one renewal, one outcome: {other:?}"),
    };
    let table = s.lease_table().await.expect("lease_table");
    let seen = &table.rows[1];
    assert_eq!(seen.doorbell, 1, "the ring is read back");
    assert_eq!(seen.etag.as_ref(), Some(&new_etag));
    assert_eq!(table.rows[0].doorbell, 0, "the other row was not rung");
    // A handover (a write built from the row as read) keeps the count.
    let released = PartitionRow {
        owner: None,
        etag: None,
        ..seen.clone()
    };
    s.put_partition(&released, seen.etag.as_ref())
        .await
        .expect("release");
    assert_eq!(partition_row(s, 1).await.doorbell, 1);
}

/// `lease_table` MUST return what `hub_info` and `list_partitions` return.
pub async fn lease_table_returns_hub_info_and_every_row(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    assert_eq!(
        s.lease_table().await.expect("lease_table before the hub"),
        crate::LeaseTable {
            info: None,
            rows: Vec::new()
        }
    );
    create(s, 3).await;
    s.set_prohibited_workers(vec!["banned".to_owned()])
        .await
        .expect("set_prohibited_workers");
    let row = partition_row(s, 1).await;
    s.put_partition(&owned_by(&row, "w", 1), row.etag.as_ref())
        .await
        .expect("put_partition");
    let table = s.lease_table().await.expect("lease_table");
    assert_eq!(table.info, s.hub_info().await.expect("hub_info"));
    assert_eq!(table.rows, rows(s).await);
    assert_eq!(table.rows.len(), 3);
    assert_eq!(table.rows[1].owner.as_deref(), Some("w"));
}

/// `renew_partitions` MUST apply each write as `put_partition` would and return each one's
/// outcome in order; a write that conflicts MUST NOT keep the others from being applied.
pub async fn renew_partitions_applies_each_write_and_reports_conflicts_alone(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    create(s, 3).await;
    let before = rows(s).await;
    // All current: every row is written, each gets a new ETag.
    let writes: Vec<(PartitionRow, ETag)> = before
        .iter()
        .map(|r| (owned_by(r, "w", 1), r.etag.clone().expect("listed ETag")))
        .collect();
    let results = s.renew_partitions(&writes).await.expect("renew_partitions");
    assert_eq!(results.len(), 3);
    let after = rows(s).await;
    for ((result, row), old) in results.iter().zip(&after).zip(&before) {
        let etag = result.as_ref().expect("every write applies");
        assert_eq!(
            row.etag.as_ref(),
            Some(etag),
            "the returned ETag is current"
        );
        assert_ne!(row.etag, old.etag);
        assert_eq!(row.owner.as_deref(), Some("w"));
    }
    // Partition 1 was taken meanwhile: its renewal conflicts, the other two still apply.
    let taken = s
        .put_partition(&owned_by(&after[1], "thief", 2), after[1].etag.as_ref())
        .await
        .expect("put_partition");
    let writes: Vec<(PartitionRow, ETag)> = after
        .iter()
        .map(|r| {
            let mut renewed = r.clone();
            renewed.updated_at = at(5_000);
            (renewed, r.etag.clone().expect("listed ETag"))
        })
        .collect();
    let results = s.renew_partitions(&writes).await.expect("renew_partitions");
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(results[1], Err(StorageError::Conflict { .. })),
        "{results:?}"
    );
    let last = rows(s).await;
    assert_eq!(last[0].updated_at, at(5_000));
    assert_eq!(last[2].updated_at, at(5_000));
    assert_eq!(last[1].owner.as_deref(), Some("thief"));
    assert_eq!(last[1].etag.as_ref(), Some(&taken));
    assert_eq!(
        s.renew_partitions(&[]).await.expect("no writes").len(),
        0,
        "nothing to write is nothing done"
    );
}
