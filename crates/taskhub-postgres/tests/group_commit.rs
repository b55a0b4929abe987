//! Checkpoints queued at the same time commit in one transaction (group commit), and a
//! checkpoint refused by its guard in such a batch is refused alone: the others commit. Run
//! with `scripts/with-postgres.sh cargo test -p taskhub-postgres --test group_commit`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use taskhub_core::InstanceId;
use taskhub_storage::{CheckpointStore, HistoryStore, StorageError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_checkpoints_share_transactions_and_a_stale_one_is_refused_alone() {
    let store = common::leased_store("w").await;

    // Round 1: every checkpoint current.
    let before = store.writer_stats();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let s = store.clone();
            tokio::spawn(async move {
                s.checkpoint(common::append_request(&format!("a{i}"), None, 1))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let after = store.writer_stats();
    let (requests, transactions) = (
        after.requests - before.requests,
        after.transactions - before.transactions,
    );
    assert_eq!(requests, 64);
    assert!(
        transactions < requests,
        "{transactions} transactions for {requests} checkpoints"
    );

    // Round 2: one stale checkpoint among current ones.
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let s = store.clone();
            let epoch = if i == 7 { 0 } else { 1 };
            tokio::spawn(async move {
                s.checkpoint(common::append_request(&format!("b{i}"), None, epoch))
                    .await
            })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let got = t.await.unwrap();
        let id = InstanceId::new(format!("b{i}")).unwrap();
        if i == 7 {
            assert!(matches!(got, Err(StorageError::Fenced { .. })), "{got:?}");
            assert!(store.load_history(&id).await.unwrap().is_none());
        } else {
            got.unwrap();
            assert_eq!(
                store.load_history(&id).await.unwrap().unwrap().events.len(),
                1
            );
        }
    }
}
