//! Cases for [`QueueStore`](crate::QueueStore): visibility timeouts, receipts, order, stats.

use std::collections::HashSet;
use std::time::Duration;

use super::fixtures::{
    advance, assert_store_time, delayed, dequeue, enqueue, just_before, msg, now,
    pass_delay_hidden, queue_length, visible_bodies, DELAY, LONG_VISIBILITY, PAST_VISIBILITY,
    VISIBILITY,
};
use super::fixtures::{assert_expired, assert_invalid};
use crate::clock::ManualClock;
use crate::error::{StorageError, StorageResult};
use crate::queue::{QueueName, Receipt};
use crate::store::TaskHubStore;

const Q: QueueName = QueueName::WorkItems;

/// `enqueue` MUST reject a body over the backend's `max_message_bytes()` with `TooLarge`
/// (and a body of exactly the limit is accepted).
pub async fn enqueue_rejects_body_over_max_message_bytes(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let limit = s.max_message_bytes();
    let too_big = "x".repeat(limit + 1);
    let result = s.enqueue(Q, vec![msg(&too_big)]).await;
    assert!(
        matches!(result, Err(StorageError::TooLarge { .. })),
        "enqueue of {} bytes: expected TooLarge, got {result:?}",
        too_big.len()
    );
    assert_eq!(
        queue_length(s, Q).await,
        0,
        "a rejected message must not be enqueued"
    );

    let exact = "y".repeat(limit);
    s.enqueue(Q, vec![msg(&exact)])
        .await
        .expect("a body of exactly max_message_bytes() must be accepted");
    let got = dequeue(s, Q, 1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, exact, "the body must come back unchanged");
}

/// `enqueue` MUST make the message invisible for `delay`.
pub async fn enqueue_delay_hides_message_until_due(s: &dyn TaskHubStore, clock: &ManualClock) {
    s.enqueue(Q, vec![delayed("later", DELAY), msg("now")])
        .await
        .expect("enqueue");
    let first = dequeue(s, Q, 32).await;
    let bodies: Vec<&str> = first.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(
        bodies,
        ["now"],
        "only the undelayed message is visible at first"
    );
    s.delete(Q, &first[0].receipt).await.expect("delete");
    pass_delay_hidden(s, clock, Q, DELAY, "a message enqueued").await;
    assert_eq!(
        visible_bodies(s, Q).await,
        ["later"],
        "a message delayed by {DELAY:?} must be visible a second after that"
    );
}

/// `dequeue` MUST return at most `max` messages.
pub async fn dequeue_returns_at_most_max(s: &dyn TaskHubStore, _clock: &ManualClock) {
    enqueue(s, Q, &["a", "b", "c", "d", "e"]).await;
    let first = dequeue(s, Q, 3).await;
    assert!(
        first.len() <= 3 && !first.is_empty(),
        "dequeue(max 3) of 5 visible messages returned {}",
        first.len()
    );
    let second = dequeue(s, Q, 1).await;
    assert_eq!(second.len(), 1, "dequeue(max 1) returned {}", second.len());
    let mut all: Vec<String> = first.into_iter().chain(second).map(|d| d.body).collect();
    for _ in 0..5 {
        all.extend(visible_bodies(s, Q).await);
    }
    all.sort();
    assert_eq!(all, ["a", "b", "c", "d", "e"], "every message exactly once");
}

/// `dequeue` MUST reject `max` of 0 or over the backend's `max_dequeue_batch()` with
/// `InvalidArgument`.
pub async fn dequeue_rejects_max_of_zero_or_over_batch_limit(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let limit = s.max_dequeue_batch();
    enqueue(s, Q, &["a"]).await;
    for max in [0, limit + 1, usize::MAX] {
        let result = s.dequeue(Q, max, VISIBILITY).await;
        assert_invalid(&result, &format!("dequeue(max {max})"));
    }
    assert_eq!(
        dequeue(s, Q, limit).await.len(),
        1,
        "rejected dequeues must not take the message, and max = max_dequeue_batch() is allowed"
    );
}

/// `dequeue` MUST NOT return a message that another dequeue holds within its visibility
/// timeout.
pub async fn dequeue_hides_message_until_visibility_timeout(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    enqueue(s, Q, &["held"]).await;
    let first = dequeue(s, Q, 1).await;
    assert_eq!(first.len(), 1);
    assert!(
        dequeue(s, Q, 32).await.is_empty(),
        "a held message must not be dequeued again at once"
    );
    enqueue(s, Q, &["other"]).await;
    advance(s, clock, just_before(s, VISIBILITY)).await;
    assert_eq!(
        visible_bodies(s, Q).await,
        ["other"],
        "a held message must still be hidden just before its visibility timeout"
    );
}

/// A message whose visibility timeout expired MUST be returned again with `dequeue_count`
/// increased by one.
pub async fn expired_message_is_redelivered_with_dequeue_count_plus_one(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    enqueue(s, Q, &["retry me"]).await;
    let mut receipts = HashSet::new();
    for expected_count in 1..=3 {
        let got = dequeue(s, Q, 1).await;
        assert_eq!(
            got.len(),
            1,
            "delivery {expected_count}: the message must be returned again after its timeout"
        );
        assert_eq!(got[0].body, "retry me");
        assert_eq!(
            got[0].dequeue_count, expected_count,
            "delivery {expected_count} has the wrong dequeue_count"
        );
        assert!(
            receipts.insert(got[0].receipt.clone()),
            "each delivery must get a new receipt"
        );
        advance(s, clock, PAST_VISIBILITY).await;
    }
}

/// When all are visible, dequeues MUST return every message, each once while it is held. The
/// order across messages is not part of the contract (Azure Storage queues are not FIFO).
pub async fn dequeue_returns_every_visible_message_once(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    enqueue(s, Q, &["m0", "m1", "m2"]).await;
    enqueue(s, Q, &["m3"]).await;
    enqueue(s, Q, &["m4", "m5", "m6", "m7"]).await;
    let mut bodies = Vec::new();
    for _ in 0..8 {
        let batch = dequeue(s, Q, 3).await;
        assert!(batch.len() <= 3, "dequeue(max 3) returned {}", batch.len());
        if batch.is_empty() {
            break;
        }
        bodies.extend(batch.into_iter().map(|d| d.body));
    }
    bodies.sort();
    assert_eq!(
        bodies,
        ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"],
        "every visible message is dequeued exactly once (in any order)"
    );
}

/// `delete` with a current receipt MUST remove the message for good.
pub async fn delete_with_current_receipt_removes_message_for_good(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    enqueue(s, Q, &["done", "keep"]).await;
    let got = dequeue(s, Q, 32).await;
    let done = got
        .iter()
        .find(|d| d.body == "done")
        .expect("both messages are dequeued");
    s.delete(Q, &done.receipt)
        .await
        .expect("delete with a current receipt");
    assert_eq!(queue_length(s, Q).await, 1, "the deleted message is gone");
    advance(s, clock, PAST_VISIBILITY).await;
    assert_eq!(
        visible_bodies(s, Q).await,
        ["keep"],
        "a deleted message must never be redelivered"
    );
    advance(s, clock, PAST_VISIBILITY).await;
    assert!(!visible_bodies(s, Q).await.contains(&"done".to_owned()));
}

/// `delete` with a stale receipt (the message was re-dequeued since) MUST fail with
/// `ReceiptExpired` and leave the message in place.
pub async fn delete_with_stale_receipt_fails_and_keeps_message(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    enqueue(s, Q, &["twice"]).await;
    let first = dequeue(s, Q, 1).await;
    advance(s, clock, PAST_VISIBILITY).await;
    let second = dequeue(s, Q, 1).await;
    assert_eq!(second.len(), 1, "the message is redelivered");
    let result = s.delete(Q, &first[0].receipt).await;
    assert_expired(&result, "delete with a stale receipt");
    assert_eq!(queue_length(s, Q).await, 1, "the message must stay");
    s.delete(Q, &second[0].receipt)
        .await
        .expect("the current receipt still deletes the message");
    assert_eq!(queue_length(s, Q).await, 0);
}

/// `abandon` MUST make the message visible again after `delay`.
pub async fn abandon_makes_message_visible_after_delay(s: &dyn TaskHubStore, clock: &ManualClock) {
    enqueue(s, Q, &["back"]).await;
    let got = s.dequeue(Q, 1, LONG_VISIBILITY).await.expect("dequeue");
    s.abandon(Q, &got[0].receipt, DELAY).await.expect("abandon");
    pass_delay_hidden(s, clock, Q, DELAY, "abandoned").await;
    let again = dequeue(s, Q, 1).await;
    assert_eq!(
        again.len(),
        1,
        "abandoned with a {DELAY:?} delay: visible a second later (well before the {LONG_VISIBILITY:?} visibility timeout)"
    );
    s.abandon(Q, &again[0].receipt, Duration::ZERO)
        .await
        .expect("abandon");
    assert_eq!(
        visible_bodies(s, Q).await,
        ["back"],
        "abandoned with no delay: visible at once"
    );
}

/// `abandon` MUST keep the message's dequeue count.
pub async fn abandon_keeps_dequeue_count(s: &dyn TaskHubStore, _clock: &ManualClock) {
    enqueue(s, Q, &["counted"]).await;
    for expected in 1..=3 {
        let got = dequeue(s, Q, 1).await;
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].dequeue_count, expected,
            "abandon must neither reset nor add to the dequeue count"
        );
        s.abandon(Q, &got[0].receipt, Duration::ZERO)
            .await
            .expect("abandon");
    }
}

/// `abandon` MUST invalidate the receipt.
pub async fn abandon_invalidates_receipt(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let let_go = LetGo::Abandon(Duration::from_secs(60));
    assert_let_go_invalidates_receipt(s, let_go, LetGo::Extend, "extend after abandon").await;
}

/// `release` MUST make the message visible again after `delay`, and the released delivery
/// MUST NOT count toward its dequeue count.
pub async fn release_makes_message_visible_after_delay_without_counting_the_delivery(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    enqueue(s, Q, &["moved"]).await;
    let first = dequeue(s, Q, 1).await;
    assert_eq!(first[0].dequeue_count, 1);
    s.release(Q, &first[0].receipt, DELAY)
        .await
        .expect("release");
    pass_delay_hidden(s, clock, Q, DELAY, "released").await;
    for _ in 0..3 {
        let again = dequeue(s, Q, 1).await;
        assert_eq!(again.len(), 1, "released: visible again after its delay");
        assert_eq!(
            again[0].dequeue_count, 1,
            "a released delivery must not count toward the dequeue count"
        );
        s.release(Q, &again[0].receipt, Duration::ZERO)
            .await
            .expect("release");
    }
    let counted = dequeue(s, Q, 1).await;
    s.abandon(Q, &counted[0].receipt, Duration::ZERO)
        .await
        .expect("abandon");
    let last = dequeue(s, Q, 1).await;
    assert_eq!(
        last[0].dequeue_count, 2,
        "an abandoned delivery still counts after released ones"
    );
}

/// `release` MUST invalidate the receipt.
pub async fn release_invalidates_receipt(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let let_go = LetGo::Release(Duration::from_secs(60));
    let again = LetGo::Release(Duration::ZERO);
    assert_let_go_invalidates_receipt(s, let_go, again, "a second release with the same receipt")
        .await;
}

/// A holder's way to give a delivery back without deleting it.
#[derive(Clone, Copy, Debug)]
enum LetGo {
    Abandon(Duration),
    Release(Duration),
    Extend,
}

impl LetGo {
    /// Its name in assertion messages.
    fn name(self) -> &'static str {
        match self {
            Self::Abandon(_) => "abandon",
            Self::Release(_) => "release",
            Self::Extend => "extend",
        }
    }

    /// Calls it on `receipt` of [`Q`] (an extension by [`VISIBILITY`]).
    async fn on(self, s: &dyn TaskHubStore, receipt: &Receipt) -> StorageResult<()> {
        match self {
            Self::Abandon(delay) => s.abandon(Q, receipt, delay).await,
            Self::Release(delay) => s.release(Q, receipt, delay).await,
            Self::Extend => s.extend(Q, receipt, VISIBILITY).await.map(|_| ()),
        }
    }
}

/// One fresh message's delivery, given back with `let_go`: a delete and `again` (the call
/// `what`) with its receipt MUST fail with `ReceiptExpired`, and the message MUST stay.
async fn assert_let_go_invalidates_receipt(
    s: &dyn TaskHubStore,
    let_go: LetGo,
    again: LetGo,
    what: &str,
) {
    enqueue(s, Q, &["let go"]).await;
    let got = dequeue(s, Q, 1).await;
    let receipt = got[0].receipt.clone();
    let given_back = let_go.on(s, &receipt).await;
    given_back.unwrap_or_else(|e| panic!("{}: {e:?}", let_go.name()));
    let deleted = s.delete(Q, &receipt).await;
    assert_expired(&deleted, &format!("delete after {}", let_go.name()));
    assert_expired(&again.on(s, &receipt).await, what);
    assert_eq!(queue_length(s, Q).await, 1, "the message must stay");
}

/// `extend` MUST push the visibility timeout to `visibility` from now.
pub async fn extend_pushes_visibility_timeout_from_now(s: &dyn TaskHubStore, clock: &ManualClock) {
    enqueue(s, Q, &["long job"]).await;
    // Dequeued for 4 s, extended at 2 s by 4 s (to 6 s), checked at 4 s and 7 s.
    let got = dequeue(s, Q, 1).await;
    let half = VISIBILITY / 2;
    advance(s, clock, half).await;
    s.extend(Q, &got[0].receipt, VISIBILITY)
        .await
        .expect("extend");
    advance(s, clock, half).await;
    assert!(
        visible_bodies(s, Q).await.is_empty(),
        "extended half-way by a full timeout: still hidden when the first timeout ends"
    );
    advance(s, clock, half + Duration::from_secs(1)).await;
    let again = dequeue(s, Q, 1).await;
    assert_eq!(
        again.len(),
        1,
        "extended half-way by a full timeout: visible a second after the extension ends"
    );
    assert_eq!(again[0].dequeue_count, 2, "extend is not a dequeue");
}

/// `extend` MUST return a new receipt that replaces the old one.
pub async fn extend_returns_new_receipt_replacing_old(s: &dyn TaskHubStore, _clock: &ManualClock) {
    enqueue(s, Q, &["renewed"]).await;
    let got = dequeue(s, Q, 1).await;
    let old = got[0].receipt.clone();
    let new = s.extend(Q, &old, VISIBILITY).await.expect("extend");
    assert_ne!(new, old, "extend must return a new receipt");
    let stale = s.delete(Q, &old).await;
    assert_expired(&stale, "delete with the replaced receipt");
    s.delete(Q, &new)
        .await
        .expect("delete with the new receipt");
    assert_eq!(queue_length(s, Q).await, 0);
}

/// `stats` MUST count visible and invisible messages.
pub async fn stats_counts_visible_and_invisible_messages(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let empty = s.stats(Q).await.expect("stats");
    assert_eq!(empty.length, 0);
    assert_eq!(empty.oldest_enqueued_at, None);
    enqueue(s, Q, &["visible", "held"]).await;
    s.enqueue(Q, vec![delayed("delayed", DELAY)])
        .await
        .expect("enqueue");
    let held = dequeue(s, Q, 1).await;
    assert_eq!(
        queue_length(s, Q).await,
        3,
        "visible, held and delayed messages all count"
    );
    s.delete(Q, &held[0].receipt).await.expect("delete");
    assert_eq!(
        queue_length(s, Q).await,
        2,
        "a deleted message does not count"
    );
}

/// `stats` reports the enqueue time of the oldest message (the `QueueStats` field docs).
pub async fn stats_reports_oldest_enqueue_time(s: &dyn TaskHubStore, clock: &ManualClock) {
    let first_at = now(s, clock).await;
    enqueue(s, Q, &["first"]).await;
    advance(s, clock, Duration::from_secs(5)).await;
    let second_at = now(s, clock).await;
    enqueue(s, Q, &["second"]).await;
    let stats = s.stats(Q).await.expect("stats");
    assert_store_time(s, stats.oldest_enqueued_at, first_at, "oldest");
    // Hold "first" and leave "second" visible, in whatever order the queue hands them out.
    let both = dequeue(s, Q, 32).await;
    assert_eq!(both.len(), 2);
    let (first, second): (Vec<_>, Vec<_>) = both.into_iter().partition(|d| d.body == "first");
    s.abandon(Q, &second[0].receipt, Duration::ZERO)
        .await
        .expect("abandon");
    // Azure Storage can only peek at visible messages (see `QueueStats`).
    let oldest_held = if s.stats_count_held_messages() {
        first_at
    } else {
        second_at
    };
    assert_store_time(
        s,
        s.stats(Q).await.expect("stats").oldest_enqueued_at,
        oldest_held,
        "a held message still counts as the oldest (the oldest visible one on Azure)",
    );
    s.delete(Q, &first[0].receipt).await.expect("delete");
    assert_store_time(
        s,
        s.stats(Q).await.expect("stats").oldest_enqueued_at,
        second_at,
        "oldest after the first is deleted",
    );
}

/// A dequeued message carries its body unchanged, a dequeue count of 1 on first delivery and
/// its enqueue time by the store's clock (the `Dequeued` field docs).
pub async fn dequeued_message_reports_body_count_and_enqueue_time(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    advance(s, clock, Duration::from_millis(1_123)).await;
    let enqueued_at = now(s, clock).await;
    let body = "{\"v\":1,\"text\":\"h\u{e9}llo \u{6771}\u{4eac} \\\"quoted\\\"\\n\"}\n\ttrailing ";
    enqueue(s, Q, &[body]).await;
    advance(s, clock, Duration::from_secs(2)).await;
    let got = dequeue(s, Q, 1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, body, "the body must come back byte for byte");
    assert_eq!(
        got[0].dequeue_count, 1,
        "first delivery has dequeue_count 1"
    );
    assert_store_time(
        s,
        Some(got[0].enqueued_at),
        enqueued_at,
        "enqueued_at is the store clock's time at enqueue",
    );
}

/// Each queue of the hub is separate: a message is only dequeued from the queue it was
/// enqueued to (the `QueueName` docs).
pub async fn queues_are_independent(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let queues = [
        QueueName::Control(0),
        QueueName::Control(1),
        QueueName::Control(15),
        QueueName::WorkItems,
    ];
    for q in queues {
        enqueue(s, q, &[&q.to_string()]).await;
    }
    for q in queues {
        assert_eq!(queue_length(s, q).await, 1, "{q} holds one message");
        assert_eq!(visible_bodies(s, q).await, [q.to_string()], "{q}");
    }
}
