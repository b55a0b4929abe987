//! Cases for claimed outbound messages ([`OutboundMessage::claim`]): a checkpoint's sender
//! takes the message as it sends it.

use std::time::Duration;

use super::fixtures::{
    advance, commit, delayed, dequeue, history_request, just_before, load, outbound, queue_length,
    started, visible_bodies, PAST_VISIBILITY, VISIBILITY,
};
use crate::checkpoint::{CheckpointRequest, OutboundMessage};
use crate::clock::ManualClock;
use crate::error::StorageError;
use crate::queue::{Dequeued, QueueName};
use crate::store::TaskHubStore;

const WORK: QueueName = QueueName::WorkItems;

fn claimed(body: &str) -> OutboundMessage {
    OutboundMessage {
        claim: Some(VISIBILITY),
        ..outbound(WORK, body)
    }
}

/// The first turn of instance `id` (its history `[started("e1")]`), sending `outbound`.
fn first_turn_sending(id: &str, outbound: Vec<OutboundMessage>) -> CheckpointRequest {
    let mut request = history_request(id, "e1", None, true, vec![started("e1")]);
    request.outbound = outbound;
    request
}

/// Commits the first turn of instance `id`, claiming one message `body`; its delivery.
async fn commit_one_claim(s: &dyn TaskHubStore, id: &str, body: &str) -> Dequeued {
    let outcome = commit(s, first_turn_sending(id, vec![claimed(body)])).await;
    let [claim] = outcome.claimed.as_slice() else {
        panic!("one claimed delivery, got {:?}", outcome.claimed);
    };
    claim.clone()
}

/// A claimed outbound message MUST NOT be dequeued by anyone before its claim's visibility
/// has passed, and MUST come back in `claimed`, in outbound order, with a receipt that
/// `delete` accepts; a claim MUST NOT be stored in `pending_outbox`.
pub async fn claimed_messages_are_hidden_and_held_by_the_sender(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let sent = vec![claimed("a-1"), outbound(WORK, "plain"), claimed("a-2")];
    let outcome = commit(s, first_turn_sending("claimer", sent)).await;
    let bodies: Vec<&str> = outcome.claimed.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(
        bodies,
        ["a-1", "a-2"],
        "claimed deliveries, in outbound order"
    );
    assert!(
        outcome.claimed.iter().all(|d| d.dequeue_count == 1),
        "a claim is the first delivery: {:?}",
        outcome.claimed
    );
    assert!(load(s, "claimer").await.pending_outbox.is_empty());
    assert_eq!(
        visible_bodies(s, WORK).await,
        ["plain"],
        "only the unclaimed message is visible"
    );
    assert_eq!(queue_length(s, WORK).await, 3);
    advance(s, clock, just_before(s, VISIBILITY)).await;
    assert!(
        dequeue(s, WORK, 32).await.is_empty(),
        "claimed messages stay hidden until their visibility passes (the plain one is held)"
    );
    for d in &outcome.claimed {
        s.delete(WORK, &d.receipt)
            .await
            .expect("the claim's receipt deletes its message");
    }
    assert_eq!(
        queue_length(s, WORK).await,
        1,
        "only the plain message is left"
    );
}

/// A claimed message nobody deleted MUST be redelivered after the claim's visibility, with
/// `dequeue_count` 2 (the claim counted as the first delivery), and the claim's receipt MUST
/// then be stale.
pub async fn unfinished_claim_is_redelivered_after_its_visibility(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let claim = commit_one_claim(s, "crashed", "orphan").await;
    advance(s, clock, PAST_VISIBILITY).await;
    let again = dequeue(s, WORK, 32).await;
    assert_eq!(again.len(), 1, "the claimed message comes back: {again:?}");
    assert_eq!(again[0].body, "orphan");
    assert_eq!(again[0].dequeue_count, 2, "the claim counted as a delivery");
    assert!(
        matches!(
            s.delete(WORK, &claim.receipt).await,
            Err(StorageError::ReceiptExpired { .. })
        ),
        "the claim's receipt is stale after a redelivery"
    );
    s.delete(WORK, &again[0].receipt)
        .await
        .expect("the new delivery deletes it");
}

/// A released claim MUST be visible again at once and its next delivery MUST report the
/// claim's count (a release does not count), so a worker that cannot run what it claimed
/// gives it to others without pushing it toward the poison threshold.
pub async fn released_claim_is_visible_without_counting(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let claim = commit_one_claim(s, "busy", "give-away").await;
    s.release(WORK, &claim.receipt, Duration::ZERO)
        .await
        .expect("release a claim");
    let again = dequeue(s, WORK, 32).await;
    assert_eq!(again.len(), 1, "a released claim is visible at once");
    assert_eq!(again[0].dequeue_count, 1, "a released claim does not count");
}

/// A claim with a `delay` (or a zero visibility) MUST be rejected with `InvalidArgument`
/// before anything is written.
pub async fn claim_with_delay_is_rejected_and_writes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for bad in [
        OutboundMessage {
            claim: Some(VISIBILITY),
            ..OutboundMessage::new(WORK, delayed("late", Duration::from_secs(3)))
        },
        OutboundMessage {
            claim: Some(Duration::ZERO),
            ..outbound(WORK, "no-visibility")
        },
    ] {
        let result = s
            .checkpoint(first_turn_sending("rejected", vec![bad.clone()]))
            .await;
        assert!(
            matches!(result, Err(StorageError::InvalidArgument(_))),
            "{bad:?} must be rejected, got {result:?}"
        );
        assert!(
            s.load_history(&super::fixtures::iid("rejected"))
                .await
                .expect("load_history")
                .is_none(),
            "a rejected claim writes no history"
        );
        assert_eq!(queue_length(s, WORK).await, 0, "and sends nothing");
    }
}
