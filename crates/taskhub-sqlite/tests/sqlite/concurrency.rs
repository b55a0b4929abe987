//! Several handles on one file, a busy database, durability settings and group commit.
#![allow(clippy::disallowed_methods, reason = "test code")]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{clock, first_checkpoint, iid, msg, open, TestDir, WriteLock};
use taskhub_core::{ExecutionId, OrchestrationStatus};
use taskhub_sqlite::{Durability, SqliteOptions, SqliteStore};
use taskhub_storage::{
    CheckpointStore, ETag, Expect, HistoryStore, HistoryWrite, InstanceStore, QueueName,
    QueueStore, StorageError,
};

const Q: QueueName = QueueName::WorkItems;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_never_deliver_one_message_twice() {
    let dir = TestDir::new();
    let path = dir.file("shared.db");
    let c = clock();
    let a = Arc::new(open(&path, &c));
    let b = Arc::new(open(&path, &c));
    let total = 600;
    for chunk in (0..total).collect::<Vec<_>>().chunks(100) {
        let msgs = chunk.iter().map(|i| msg(&format!("m{i}"))).collect();
        a.enqueue(Q, msgs).await.unwrap();
    }
    let mut tasks = Vec::new();
    for (k, store) in [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .enumerate()
    {
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let batch = store
                    .dequeue(Q, 1 + k * 7 % 32, Duration::from_secs(300))
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return got;
                }
                got.extend(batch.into_iter().map(|d| (d.body, d.receipt)));
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut receipts = Vec::new();
    for t in tasks {
        for (body, receipt) in t.await.unwrap() {
            assert!(seen.insert(body.clone()), "{body} was delivered twice");
            receipts.push(receipt);
        }
    }
    assert_eq!(seen.len(), total);
    // Either handle can delete what the other dequeued.
    for (i, r) in receipts.iter().enumerate() {
        let store = if i % 2 == 0 { &a } else { &b };
        store.delete(Q, r).await.unwrap();
    }
    assert_eq!(b.stats(Q).await.unwrap().length, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_cannot_both_commit_from_the_same_history() {
    let dir = TestDir::new();
    let path = dir.file("shared.db");
    let c = clock();
    let a = Arc::new(open(&path, &c));
    let b = Arc::new(open(&path, &c));
    a.checkpoint(first_checkpoint("i")).await.unwrap();
    let loaded = b.load_history(&iid("i")).await.unwrap().unwrap();
    let make = |n: u64| taskhub_storage::CheckpointRequest {
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: Some(loaded.etag.clone()),
            new_execution: false,
            events: vec![crate::common::event(n)],
        }),
        instance: None,
        ..first_checkpoint("i")
    };
    let (ra, rb) = tokio::join!(a.checkpoint(make(2)), b.checkpoint(make(3)));
    assert!(
        ra.is_ok() != rb.is_ok(),
        "exactly one must commit: {ra:?} {rb:?}"
    );
    let err = ra.err().or(rb.err()).unwrap();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err}");
    assert_eq!(
        a.load_history(&iid("i"))
            .await
            .unwrap()
            .unwrap()
            .events
            .len(),
        2
    );
}

#[tokio::test]
async fn a_busy_database_waits_instead_of_failing() {
    let dir = TestDir::new();
    let path = dir.file("busy.db");
    let store = open(&path, &clock());
    // The lock goes once the write has been submitted and found it taken (its future is
    // pending), well within the busy timeout.
    let lock = WriteLock::take(&path);
    let write = store.enqueue(Q, vec![msg("waited")]);
    tokio::pin!(write);
    let submitted = Arc::new(AtomicBool::new(false));
    let (released, holder) = {
        let submitted = Arc::clone(&submitted);
        lock.release_when(move || submitted.load(Ordering::SeqCst))
    };
    tokio::select! {
        biased;
        result = &mut write => panic!("the write finished while the lock was held: {result:?}"),
        () = std::future::ready(()) => submitted.store(true, Ordering::SeqCst),
    }
    write.await.unwrap();
    assert!(released.load(Ordering::SeqCst));
    holder.join().unwrap();
    // Reads never wait for the writer (WAL): they answer while the lock is held.
    let lock = WriteLock::take(&path);
    assert_eq!(store.stats(Q).await.unwrap().length, 1);
    lock.release();
}

#[tokio::test]
async fn a_lock_held_past_the_busy_timeout_is_a_retryable_busy() {
    let dir = TestDir::new();
    let path = dir.file("busy.db");
    let store = SqliteStore::open(
        SqliteOptions::new(&path)
            .with_clock(Arc::new(clock()))
            .with_busy_timeout(Duration::from_millis(50)),
    )
    .unwrap();
    // Held until the write has given up: however slow the machine, the lock outlives the
    // busy timeout.
    let lock = WriteLock::take(&path);
    let err = store.enqueue(Q, vec![msg("x")]).await.unwrap_err();
    assert!(matches!(err, StorageError::Busy { .. }), "{err}");
    assert!(err.is_retryable());
    lock.release();
    store.enqueue(Q, vec![msg("x")]).await.unwrap();
    assert_eq!(store.stats(Q).await.unwrap().length, 1);
}

#[tokio::test]
async fn durability_sets_synchronous() {
    let dir = TestDir::new();
    for (durability, expected) in [(Durability::Normal, "1"), (Durability::Full, "2")] {
        let store = SqliteStore::open(
            SqliteOptions::new(dir.file(&format!("{durability:?}.db"))).with_durability(durability),
        )
        .unwrap();
        assert_eq!(store.durability(), durability);
        assert_eq!(store.writer_pragma("synchronous").await.unwrap(), expected);
        assert_eq!(store.writer_pragma("journal_mode").await.unwrap(), "wal");
    }
}

#[tokio::test]
async fn full_durability_relaxes_only_dequeues() {
    let dir = TestDir::new();
    let store = SqliteStore::open(
        SqliteOptions::new(dir.file("relaxed.db")).with_durability(Durability::Full),
    )
    .unwrap();
    store.enqueue(Q, vec![msg("a"), msg("b")]).await.unwrap();
    // A dequeue alone commits with synchronous = NORMAL ...
    let got = store.dequeue(Q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got.len(), 1);
    // ... and every other write is back under FULL.
    assert_eq!(store.writer_pragma("synchronous").await.unwrap(), "2");
    store.delete(Q, &got[0].receipt).await.unwrap();
    assert_eq!(store.stats(Q).await.unwrap().length, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_checkpoints_are_group_committed() {
    let dir = TestDir::new();
    let store = Arc::new(
        SqliteStore::open(
            SqliteOptions::new(dir.file("group.db"))
                .with_durability(Durability::Full)
                .with_clock(Arc::new(clock())),
        )
        .unwrap(),
    );
    let before = store.writer_stats();
    let n = 200;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.checkpoint(first_checkpoint(&format!("g{i}"))).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let after = store.writer_stats();
    let requests = after.requests - before.requests;
    let transactions = after.transactions - before.transactions;
    assert_eq!(requests, n);
    assert!(
        transactions < requests,
        "{transactions} transactions for {requests} requests"
    );
    for i in [0, 99, 199] {
        assert!(store
            .load_history(&iid(&format!("g{i}")))
            .await
            .unwrap()
            .is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_request_in_a_batch_fails_alone() {
    let dir = TestDir::new();
    let store = Arc::new(open(&dir.file("batch.db"), &clock()));
    // Requests 4k+3 find their instance row already there: they fail after writing their
    // history, which must be undone while their neighbours' writes commit.
    for i in (3..100).step_by(4) {
        let row = crate::common::row(&format!("b{i}"), "Orch", OrchestrationStatus::Pending, 1);
        store.put_instance(&row, Expect::Any).await.unwrap();
    }
    let before = store.writer_stats();
    // Every odd request fails: 4k+1 names an ETag that cannot match, 4k+3 the row conflict.
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut req = first_checkpoint(&format!("b{i}"));
                if i % 4 == 1 {
                    if let Some(h) = req.history.as_mut() {
                        h.expected = Some(ETag("no-such-etag".into()));
                    }
                }
                (i, store.checkpoint(req).await)
            })
        })
        .collect();
    for t in tasks {
        let (i, result) = t.await.unwrap();
        let stored = store.load_history(&iid(&format!("b{i}"))).await.unwrap();
        if i % 2 == 1 {
            assert!(
                matches!(result, Err(StorageError::Conflict { .. })),
                "{result:?}"
            );
            assert!(stored.is_none());
        } else {
            result.unwrap();
            assert!(stored.is_some());
        }
    }
    // Some of them shared a transaction (else this test proves nothing about batches).
    let after = store.writer_stats();
    assert!(
        after.transactions - before.transactions < after.requests - before.requests,
        "{before:?} {after:?}"
    );
}

/// An idle writer runs a write on the caller's thread; a write that finds the lock taken by
/// another connection goes to the writer thread and waits there, not on the async thread.
#[tokio::test(flavor = "current_thread")]
async fn writes_run_inline_when_idle_and_wait_off_the_async_thread_when_locked() {
    let dir = TestDir::new();
    let path = dir.file("inline.db");
    let store = open(&path, &clock());
    let before = store.writer_stats();
    store.enqueue(Q, vec![msg("inline")]).await.unwrap();
    let after = store.writer_stats();
    assert_eq!(after.inline_requests, before.inline_requests + 1);

    // The lock is released only once the one async thread has run another task ten times
    // while the write waited: a write that blocked the thread would hold the lock until the
    // holder gives up, and the tick count would show it.
    let ticks = Arc::new(AtomicU32::new(0));
    let (released, holder) = {
        let ticks = Arc::clone(&ticks);
        WriteLock::take(&path).release_when(move || ticks.load(Ordering::SeqCst) >= 10)
    };
    let ticker = {
        let ticks = Arc::clone(&ticks);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                ticks.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    store.enqueue(Q, vec![msg("queued")]).await.unwrap();
    assert!(
        released.load(Ordering::SeqCst),
        "the write did not wait for the lock"
    );
    // The one async thread kept running other tasks while the write waited for the lock.
    assert!(
        ticks.load(Ordering::SeqCst) >= 10,
        "the async thread was blocked"
    );
    assert_eq!(store.writer_stats().inline_requests, after.inline_requests);
    ticker.abort();
    holder.join().unwrap();
    assert_eq!(store.stats(Q).await.unwrap().length, 2);
}

#[tokio::test]
async fn full_durability_never_writes_inline() {
    let dir = TestDir::new();
    let store = SqliteStore::open(
        SqliteOptions::new(dir.file("full.db"))
            .with_clock(Arc::new(clock()))
            .with_durability(Durability::Full),
    )
    .unwrap();
    store.enqueue(Q, vec![msg("a")]).await.unwrap();
    store.enqueue(Q, vec![msg("b")]).await.unwrap();
    let stats = store.writer_stats();
    assert_eq!(stats.inline_requests, 0);
    assert!(stats.requests >= 2);
}
