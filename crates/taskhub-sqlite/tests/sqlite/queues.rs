//! Queue semantics on SQLite: order, visibility timeouts, receipts, limits.

use std::time::Duration;

use crate::common::{clock, msg, open, TestDir};
use taskhub_storage::{
    Clock, NewQueueMessage, QueueName, QueueStore, StorageError, MAX_DEQUEUE_BATCH,
    MAX_MESSAGE_BYTES,
};

const Q: QueueName = QueueName::Control(2);
const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn fifo_visibility_and_redelivery() {
    let dir = TestDir::new();
    let c = clock();
    let store = open(&dir.file("q.db"), &c);
    store
        .enqueue(Q, vec![msg("a"), msg("b"), msg("c")])
        .await
        .unwrap();
    store
        .enqueue(QueueName::WorkItems, vec![msg("w")])
        .await
        .unwrap();
    let first = store.dequeue(Q, 2, MINUTE).await.unwrap();
    let bodies: Vec<_> = first.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(bodies, ["a", "b"]);
    assert!(first.iter().all(|d| d.dequeue_count == 1));
    assert_eq!(first[0].enqueued_at, c.now());
    // Held messages stay hidden; the rest comes out.
    let second = store.dequeue(Q, 32, MINUTE).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].body, "c");
    assert!(store.dequeue(Q, 32, MINUTE).await.unwrap().is_empty());
    // After the timeout, redelivered with a higher count; the old receipt is stale.
    c.advance(MINUTE);
    let again = store.dequeue(Q, 32, MINUTE).await.unwrap();
    assert_eq!(again.len(), 3);
    assert_eq!(again[0].body, "a");
    assert_eq!(again[0].dequeue_count, 2);
    let err = store.delete(Q, &first[0].receipt).await.unwrap_err();
    assert!(matches!(err, StorageError::ReceiptExpired { .. }), "{err}");
    store.delete(Q, &again[0].receipt).await.unwrap();
    let stats = store.stats(Q).await.unwrap();
    assert_eq!(stats.length, 2);
    assert_eq!(stats.oldest_enqueued_at, Some(first[1].enqueued_at));
    assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 1);
}

#[tokio::test]
async fn delay_abandon_and_extend() {
    let dir = TestDir::new();
    let c = clock();
    let store = open(&dir.file("q.db"), &c);
    store
        .enqueue(
            Q,
            vec![NewQueueMessage {
                body: "late".into(),
                delay: Duration::from_secs(10),
            }],
        )
        .await
        .unwrap();
    assert!(store.dequeue(Q, 1, MINUTE).await.unwrap().is_empty());
    c.advance(Duration::from_secs(10));
    let got = store.dequeue(Q, 1, MINUTE).await.unwrap().remove(0);
    store
        .abandon(Q, &got.receipt, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(
        store.abandon(Q, &got.receipt, Duration::ZERO).await,
        Err(StorageError::ReceiptExpired { .. })
    ));
    assert!(store.dequeue(Q, 1, MINUTE).await.unwrap().is_empty());
    c.advance(Duration::from_secs(5));
    let got = store.dequeue(Q, 1, MINUTE).await.unwrap().remove(0);
    assert_eq!(got.dequeue_count, 2);
    c.advance(Duration::from_secs(50));
    let renewed = store.extend(Q, &got.receipt, MINUTE).await.unwrap();
    assert_ne!(renewed, got.receipt);
    c.advance(Duration::from_secs(30));
    // Past the original timeout, still hidden thanks to the extension.
    assert!(store.dequeue(Q, 1, MINUTE).await.unwrap().is_empty());
    assert!(matches!(
        store.delete(Q, &got.receipt).await,
        Err(StorageError::ReceiptExpired { .. })
    ));
    store.delete(Q, &renewed).await.unwrap();
    assert_eq!(store.stats(Q).await.unwrap().length, 0);
}

#[tokio::test]
async fn limits_are_enforced() {
    let dir = TestDir::new();
    let store = open(&dir.file("q.db"), &clock());
    let err = store
        .enqueue(Q, vec![msg("ok"), msg(&"x".repeat(MAX_MESSAGE_BYTES + 1))])
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { size, .. } if size == MAX_MESSAGE_BYTES + 1));
    assert_eq!(store.stats(Q).await.unwrap().length, 0, "all or nothing");
    store
        .enqueue(Q, vec![msg(&"x".repeat(MAX_MESSAGE_BYTES))])
        .await
        .unwrap();
    for max in [0, MAX_DEQUEUE_BATCH + 1] {
        let err = store.dequeue(Q, max, MINUTE).await.unwrap_err();
        assert!(matches!(err, StorageError::InvalidArgument(_)), "{err}");
    }
    let err = store
        .dequeue(QueueName::Control(16), 1, MINUTE)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::InvalidArgument(_)), "{err}");
    let receipt = taskhub_storage::Receipt("garbage".into());
    assert!(matches!(
        store.delete(Q, &receipt).await,
        Err(StorageError::ReceiptExpired { .. })
    ));
}

#[tokio::test]
async fn dequeue_returns_at_most_the_batch_limit() {
    let dir = TestDir::new();
    let store = open(&dir.file("q.db"), &clock());
    let many: Vec<_> = (0..40).map(|i| msg(&format!("m{i:02}"))).collect();
    store.enqueue(Q, many).await.unwrap();
    let got = store.dequeue(Q, MAX_DEQUEUE_BATCH, MINUTE).await.unwrap();
    assert_eq!(got.len(), MAX_DEQUEUE_BATCH);
    assert_eq!(got[31].body, "m31");
}
