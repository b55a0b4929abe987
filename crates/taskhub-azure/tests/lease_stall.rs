//! Lease calls are bounded (`LEASE_REQUEST_TIMEOUT`) and renewals independent (issue 20,
//! item 5): with a loopback proxy between the store and Azurite that holds chosen requests to
//! the partitions table for ever,
//!
//! * a lease-table read that hangs fails within the bound (it used to wait 30 s, then retry);
//! * a renewal batch that hangs fails within the bound, and every row is then renewed on its
//!   own;
//! * a row whose own write hangs as well fails alone: the other rows are renewed.

#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;
mod loopback;

use std::time::{Duration, Instant};

use loopback::proxy::{authority, Proxy, Seen};
use taskhub_azure::{AzureStore, LEASE_REQUEST_TIMEOUT};
use taskhub_core::Timestamp;
use taskhub_storage::{ETag, ManualClock, PartitionRow, PartitionStore, StorageResult};

const PARTITIONS: u32 = 4;

/// A fresh hub whose Table requests go through a proxy.
async fn store_behind_proxy() -> (AzureStore, Proxy) {
    let mut account = common::account();
    let proxy = Proxy::start(authority(&account.table_endpoint)).await;
    account.table_endpoint = proxy.endpoint(&account.table_endpoint);
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let store = common::create_store(account, std::sync::Arc::new(clock)).await;
    store
        .create_hub(PARTITIONS, Timestamp::from_millis(1_700_000_000_000))
        .await
        .unwrap();
    (store, proxy)
}

/// Claims every partition for `w`; returns the rows as written.
async fn claim_all(store: &AzureStore) -> Vec<(PartitionRow, ETag)> {
    let mut out = Vec::new();
    for row in store.list_partitions().await.unwrap() {
        let claimed = PartitionRow {
            owner: Some("w".to_owned()),
            epoch: row.epoch + 1,
            etag: None,
            ..row.clone()
        };
        let etag = store
            .put_partition(&claimed, row.etag.as_ref())
            .await
            .unwrap();
        out.push((claimed, etag));
    }
    out
}

/// The renewals of `held`: the same rows, `updated_at` moved on.
fn renewals(held: &[(PartitionRow, ETag)]) -> Vec<(PartitionRow, ETag)> {
    held.iter()
        .map(|(row, etag)| {
            let renewed = PartitionRow {
                updated_at: Timestamp::from_millis(row.updated_at.as_millis() + 10_000),
                ..row.clone()
            };
            (renewed, etag.clone())
        })
        .collect()
}

fn is_renewal_batch(r: &Seen) -> bool {
    r.method == "POST" && r.target.ends_with("$batch") && r.body.contains("Partitions(")
}

fn is_row_write(r: &Seen, partition: u32) -> bool {
    r.method == "PUT"
        && r.target
            .contains(&format!("RowKey='partition-{partition:02}'"))
}

/// The bound of one lease call, with room for a loaded machine.
fn one_call() -> Duration {
    LEASE_REQUEST_TIMEOUT + Duration::from_millis(1_500)
}

/// Renews `writes` (which must not fail as a whole): the per-row results and how long it took.
async fn timed_renewal(
    store: &AzureStore,
    writes: &[(PartitionRow, ETag)],
) -> (Vec<StorageResult<ETag>>, Duration) {
    let started = Instant::now();
    let results = store.renew_partitions(writes).await.unwrap();
    (results, started.elapsed())
}

#[tokio::test]
async fn a_lease_table_read_that_hangs_fails_within_the_lease_bound() {
    let (store, proxy) = store_behind_proxy().await;
    proxy.stall(1, |r| {
        r.method == "GET" && r.target.contains("Partitions()")
    });
    let started = Instant::now();
    let read = store.lease_table().await;
    let took = started.elapsed();
    assert!(
        took < one_call(),
        "a hung lease-table read took {took:?} (bound {LEASE_REQUEST_TIMEOUT:?})"
    );
    assert!(read.is_err(), "the hung read reported {read:?}");
    assert!(proxy.seen().iter().any(|r| r.stalled), "nothing was held");
    // The next read goes through.
    assert_eq!(
        store.lease_table().await.unwrap().rows.len(),
        PARTITIONS as usize
    );
}

#[tokio::test]
async fn a_renewal_batch_that_hangs_fails_fast_and_every_row_is_renewed_on_its_own() {
    let (store, proxy) = store_behind_proxy().await;
    let held = claim_all(&store).await;
    proxy.stall(1, is_renewal_batch);
    let writes = renewals(&held);
    let (results, took) = timed_renewal(&store, &writes).await;
    assert!(
        took < one_call() + one_call(),
        "renewing with a hung batch took {took:?} (bound {LEASE_REQUEST_TIMEOUT:?} per call)"
    );
    assert!(proxy.seen().iter().any(|r| r.stalled), "nothing was held");
    let rows = store.list_partitions().await.unwrap();
    for ((written, _), (result, row)) in writes.iter().zip(results.iter().zip(&rows)) {
        let etag = result
            .as_ref()
            .unwrap_or_else(|e| panic!("partition {} not renewed: {e}", written.partition));
        assert_eq!(row.etag.as_ref(), Some(etag));
        assert_eq!(row.updated_at, written.updated_at);
    }
}

#[tokio::test]
async fn one_row_that_hangs_does_not_hold_up_the_renewal_of_the_others() {
    let (store, proxy) = store_behind_proxy().await;
    let held = claim_all(&store).await;
    proxy.stall(1, is_renewal_batch);
    proxy.stall(1, |r| is_row_write(r, 1));
    let writes = renewals(&held);
    let (results, took) = timed_renewal(&store, &writes).await;
    assert!(
        took < one_call() + one_call(),
        "renewing with a hung batch and a hung row took {took:?}"
    );
    let held_back: Vec<Seen> = proxy.seen().into_iter().filter(|r| r.stalled).collect();
    assert_eq!(held_back.len(), 2, "{held_back:?}");
    let rows = store.list_partitions().await.unwrap();
    for ((written, _), (result, row)) in writes.iter().zip(results.iter().zip(&rows)) {
        if written.partition == 1 {
            assert!(
                result.as_ref().is_err_and(|e| !e.is_conflict()),
                "the hung row reported {result:?}"
            );
            assert_ne!(row.updated_at, written.updated_at);
        } else {
            let etag = result
                .as_ref()
                .unwrap_or_else(|e| panic!("partition {} not renewed: {e}", written.partition));
            assert_eq!(row.etag.as_ref(), Some(etag));
            assert_eq!(row.updated_at, written.updated_at);
        }
    }
}
