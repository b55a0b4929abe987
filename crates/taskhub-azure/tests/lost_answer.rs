//! A conditional commit whose answer is lost: the batch lands at the service, the connection
//! drops before the answer, the HTTP layer sends it again and the service answers 409 (the
//! sentinel exists) or 412 (its ETag moved on, by this very batch). The checkpoint reads the
//! sentinel back, finds its own commit there and reports success, not a conflict (which would
//! abandon the turn, count toward the poison threshold and re-send the outbox: a duplicate
//! activity). A real conflict is still one. Azurite behind a loopback proxy that drops the
//! answer of chosen requests: `scripts/with-azurite.sh cargo test -p taskhub-azure --test lost_answer`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
mod loopback;

use std::sync::Arc;
use std::time::Duration;

use loopback::proxy::{authority, Proxy, Seen};
use taskhub_azure::StorageAccount;
use taskhub_core::{HistoryEvent, InstanceId, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, ETag, HistoryStore, ManualClock, NewQueueMessage,
    OutboundMessage, QueueName, StorageError,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

/// A commit batch: a `$batch` that writes the sentinel.
fn is_commit(r: &Seen) -> bool {
    r.method == "POST" && r.target.ends_with("/$batch") && r.body.contains("sentinel")
}

/// How many commit batches reached the proxy.
fn commits(proxy: &Proxy) -> usize {
    proxy.seen().iter().filter(|r| is_commit(r)).count()
}

/// The test account with its Table endpoint behind a new [`Proxy`].
async fn proxied() -> (StorageAccount, Proxy) {
    let mut account = common::account();
    let proxy = Proxy::start(authority(&account.table_endpoint)).await;
    account.table_endpoint = proxy.endpoint(&account.table_endpoint);
    (account, proxy)
}

fn event(i: u64) -> HistoryEvent {
    common::raised_event(START, i)
}

/// A checkpoint that appends `events` and sends a work item.
fn write(
    id: &InstanceId,
    expected: Option<ETag>,
    events: std::ops::Range<u64>,
) -> CheckpointRequest {
    CheckpointRequest {
        outbound: vec![OutboundMessage {
            claim: None,
            queue: QueueName::WorkItems,
            message: NewQueueMessage {
                body: "work".to_owned(),
                delay: Duration::ZERO,
            },
        }],
        ..common::history_checkpoint(id, expected, events.map(event).collect())
    }
}

/// The first commit of an instance (an insert of the sentinel, 409 on the re-send) and a
/// later one (a replace conditional on the ETag, 412 on the re-send), each with its answer
/// lost once: both report success with the sentinel's real ETag (the next commit and each
/// step 5, conditional on it, succeed), and the history holds each event once. A commit
/// from a stale ETag is still a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_was_lost_is_not_a_conflict() {
    let (account, proxy) = proxied().await;
    let s = common::create_store(account, Arc::new(ManualClock::new(START))).await;
    let id = InstanceId::new("lost").unwrap();

    proxy.lose_answer(1, is_commit);
    let first = s
        .checkpoint(write(&id, None, 0..3))
        .await
        .expect("the inserted sentinel is this checkpoint's own: not a conflict");
    assert_eq!(commits(&proxy), 2, "the commit was sent twice");
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(first.history_etag, Some(loaded.etag.clone()));

    proxy.lose_answer(1, is_commit);
    let second = s
        .checkpoint(write(&id, first.history_etag.clone(), 3..5))
        .await
        .expect("the replaced sentinel is this checkpoint's own: not a conflict");
    assert_eq!(commits(&proxy), 4);
    let third = s
        .checkpoint(write(&id, second.history_etag.clone(), 5..6))
        .await
        .expect("the ETag reported after the read-back is the sentinel's");
    assert_eq!(
        s.outbox_clear_failures(),
        0,
        "every step 5 ran on the right ETag"
    );
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.events, (0..6).map(event).collect::<Vec<_>>());
    assert_eq!(third.history_etag, Some(loaded.etag));

    let stale = s.checkpoint(write(&id, first.history_etag, 6..7)).await;
    assert!(
        matches!(stale, Err(StorageError::Conflict { .. })),
        "a stale ETag is a conflict: {stale:?}"
    );
    s.delete_hub().await.unwrap();
}
