//! Cases for [`DeadLetterStore`](crate::DeadLetterStore).

use std::collections::HashSet;
use std::time::Duration;

use super::fixtures::assert_expired;
use super::fixtures::{advance, at, dequeue, enqueue, queue_length, PAST_VISIBILITY};
use crate::clock::{Clock, ManualClock};
use crate::dead_letters::DeadLetter;
use crate::queue::QueueName;
use crate::store::TaskHubStore;

fn letter(clock: &ManualClock, body: &str) -> DeadLetter {
    DeadLetter {
        id: "chosen-by-the-caller".to_owned(),
        queue: QueueName::Control(3),
        body: body.to_owned(),
        reason: format!("failed 5 times: {body}"),
        dequeue_count: 5,
        dead_lettered_at: clock.now(),
    }
}

/// Adds letters `0`..`n`, a second apart; returns their IDs in order.
async fn add_letters(s: &dyn TaskHubStore, clock: &ManualClock, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let id = s
            .add_dead_letter(letter(clock, &i.to_string()))
            .await
            .expect("add_dead_letter");
        ids.push(id);
        clock.advance(Duration::from_secs(1));
    }
    ids
}

async fn list(s: &dyn TaskHubStore, after: Option<&str>, limit: usize) -> Vec<DeadLetter> {
    s.list_dead_letters(after, limit)
        .await
        .expect("list_dead_letters")
}

fn bodies(letters: &[DeadLetter]) -> Vec<&str> {
    letters.iter().map(|l| l.body.as_str()).collect()
}

/// `add_dead_letter` MUST assign a new unique ID and return it.
pub async fn add_dead_letter_assigns_new_unique_ids(s: &dyn TaskHubStore, clock: &ManualClock) {
    let mut ids = HashSet::new();
    for _ in 0..5 {
        let id = s
            .add_dead_letter(letter(clock, "same content"))
            .await
            .expect("add_dead_letter");
        assert!(!id.is_empty(), "an empty ID");
        assert!(ids.insert(id.clone()), "ID {id:?} was handed out twice");
    }
    let listed: HashSet<String> = list(s, None, 100).await.into_iter().map(|l| l.id).collect();
    assert_eq!(listed, ids, "the stored letters carry the returned IDs");
}

/// `list_dead_letters` MUST return letters oldest first.
pub async fn list_dead_letters_returns_oldest_first(s: &dyn TaskHubStore, clock: &ManualClock) {
    let ids = add_letters(s, clock, 4).await;
    let listed = list(s, None, 100).await;
    assert_eq!(bodies(&listed), ["0", "1", "2", "3"]);
    let listed_ids: Vec<String> = listed.into_iter().map(|l| l.id).collect();
    assert_eq!(listed_ids, ids);
}

/// `list_dead_letters` MUST return at most `limit` letters.
pub async fn list_dead_letters_returns_at_most_limit(s: &dyn TaskHubStore, clock: &ManualClock) {
    add_letters(s, clock, 5).await;
    for limit in [1, 2, 4, 5, 6] {
        let got = list(s, None, limit).await;
        assert!(
            !got.is_empty() && got.len() <= limit,
            "limit {limit}: got {} letters",
            got.len()
        );
    }
}

/// `list_dead_letters` MUST start after `after` (an ID from a previous page).
pub async fn list_dead_letters_starts_after_given_id(s: &dyn TaskHubStore, clock: &ManualClock) {
    let ids = add_letters(s, clock, 5).await;
    assert_eq!(bodies(&list(s, Some(&ids[1]), 100).await), ["2", "3", "4"]);
    assert!(
        list(s, Some(&ids[4]), 100).await.is_empty(),
        "nothing after the last"
    );
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10 {
        let page = list(s, after.as_deref(), 2).await;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        paged.extend(page.into_iter().map(|l| l.body));
    }
    assert_eq!(
        paged,
        ["0", "1", "2", "3", "4"],
        "paging visits every letter once"
    );
}

/// `take_dead_letter` MUST remove and return the letter.
pub async fn take_dead_letter_removes_and_returns_it(s: &dyn TaskHubStore, clock: &ManualClock) {
    let ids = add_letters(s, clock, 3).await;
    let taken = s.take_dead_letter(&ids[1]).await.expect("take_dead_letter");
    let expected = DeadLetter {
        id: ids[1].clone(),
        queue: QueueName::Control(3),
        body: "1".to_owned(),
        reason: "failed 5 times: 1".to_owned(),
        dequeue_count: 5,
        dead_lettered_at: at(1_000),
    };
    assert_eq!(taken.as_ref(), Some(&expected), "every field comes back");
    assert_eq!(bodies(&list(s, None, 100).await), ["0", "2"]);
    assert_eq!(
        s.take_dead_letter(&ids[1]).await.expect("take_dead_letter"),
        None,
        "a taken letter is gone"
    );
}

/// `take_dead_letter` MUST return `None` for an unknown ID.
pub async fn take_missing_dead_letter_is_none(s: &dyn TaskHubStore, clock: &ManualClock) {
    assert_eq!(
        s.take_dead_letter("no-such-letter").await.expect("take"),
        None
    );
    add_letters(s, clock, 1).await;
    assert_eq!(
        s.take_dead_letter("no-such-letter").await.expect("take"),
        None
    );
    assert_eq!(list(s, None, 10).await.len(), 1, "the stored letter stays");
}

/// `move_to_dead_letters` MUST store the letter and delete the message as one step, and a
/// repeat with the same (now stale) receipt MUST fail with `ReceiptExpired` and store no
/// second letter.
pub async fn move_to_dead_letters_stores_the_letter_deletes_the_message_and_is_not_repeated(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let q = QueueName::Control(2);
    enqueue(s, q, &["poison"]).await;
    let got = dequeue(s, q, 1).await;
    let id = s
        .move_to_dead_letters(q, &got[0].receipt, letter(clock, "poison"))
        .await
        .expect("move_to_dead_letters");
    assert_eq!(queue_length(s, q).await, 0, "the message left its queue");
    let letters = list(s, None, 10).await;
    assert_eq!(bodies(&letters), ["poison"]);
    assert_eq!(letters[0].id, id, "the returned ID is the letter's");
    assert_eq!(
        letters[0].queue, q,
        "the letter names the queue it came from"
    );
    let again = s
        .move_to_dead_letters(q, &got[0].receipt, letter(clock, "poison"))
        .await;
    assert_expired(&again, "a repeated move");
    assert_eq!(list(s, None, 10).await.len(), 1, "no second letter");
}

/// `move_to_dead_letters` with a stale receipt (the message was redelivered since) MUST fail
/// with `ReceiptExpired`, store nothing and leave the message in its queue.
pub async fn move_to_dead_letters_with_stale_receipt_stores_nothing(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let q = QueueName::WorkItems;
    enqueue(s, q, &["redelivered"]).await;
    let first = dequeue(s, q, 1).await;
    advance(s, clock, PAST_VISIBILITY).await;
    let second = dequeue(s, q, 1).await;
    assert_eq!(second.len(), 1);
    let moved = s
        .move_to_dead_letters(q, &first[0].receipt, letter(clock, "redelivered"))
        .await;
    assert_expired(&moved, "a move with a stale receipt");
    assert!(list(s, None, 10).await.is_empty(), "no letter stored");
    assert_eq!(queue_length(s, q).await, 1, "the message stays");
}
