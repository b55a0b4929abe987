//! Cases for [`CheckpointStore`](crate::CheckpointStore): fencing, optimistic concurrency,
//! and what a committed checkpoint leaves behind.

use taskhub_core::OrchestrationStatus::{Completed, Running};

use super::fixtures::{
    advance, commit, delayed, dequeue, enqueue, history_request, iid, instance, json, load,
    outbound, pass_delay_hidden, queue_length, raised, row, start_history, started, take_lease,
    visible_bodies, without_etag, DELAY, PAST_VISIBILITY, START,
};
use super::fixtures::{assert_conflict, assert_expired};
use super::refused::{consumable, FencedHub, Unchanged};
use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, OutboundMessage};
use crate::clock::ManualClock;
use crate::error::{StorageError, StorageResult};
use crate::history::HistorySnapshot;
use crate::instances::{Expect, InstanceRow};
use crate::queue::QueueName;
use crate::store::TaskHubStore;

const WORK: QueueName = QueueName::WorkItems;

/// A turn appending one `EventRaised` named `tag` to `loaded`, sending a work item `tag` and
/// setting the custom status to `tag`.
fn tagged_turn(id: &str, loaded: Option<&HistorySnapshot>, tag: &str) -> CheckpointRequest {
    let mut request = match loaded {
        Some(snapshot) => history_request(
            id,
            snapshot.execution_id.as_str(),
            Some(snapshot),
            false,
            vec![raised(10, tag)],
        ),
        None => history_request(id, tag, None, true, vec![started(tag)]),
    };
    request.outbound = vec![outbound(WORK, tag)];
    request.instance = Some((
        InstanceRow {
            custom_status: Some(json(&format!("\"{tag}\""))),
            ..row(id, "Conformance", Running, START)
        },
        Expect::Any,
    ));
    request
}

/// Checks that exactly one of two racing checkpoints committed and the other got `Conflict`;
/// returns the winner's tag.
fn single_winner(results: [(StorageResult<CheckpointOutcome>, &str); 2]) -> &str {
    let winners: Vec<&str> = results
        .iter()
        .filter(|(r, _)| r.is_ok())
        .map(|(_, tag)| *tag)
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one of two checkpoints from the same history may commit: {results:?}"
    );
    for (r, tag) in &results {
        if let Err(e) = r {
            assert!(
                matches!(e, StorageError::Conflict { .. }),
                "the losing checkpoint '{tag}' must fail with Conflict, got {e:?}"
            );
        }
    }
    winners[0]
}

/// Runs the turns tagged "one" and "two" of instance `id`, both from `loaded`, at once;
/// checks that exactly one committed ([`single_winner`]) and returns its tag.
async fn race_two_turns(
    s: &dyn TaskHubStore,
    id: &str,
    loaded: Option<&HistorySnapshot>,
) -> &'static str {
    let (a, b) = tokio::join!(
        s.checkpoint(tagged_turn(id, loaded, "one")),
        s.checkpoint(tagged_turn(id, loaded, "two")),
    );
    single_winner([(a, "one"), (b, "two")])
}

/// A checkpoint whose fence epoch is not the partition's current epoch MUST fail with
/// `Fenced` and MUST leave history, instance row and queues unchanged.
pub async fn fenced_checkpoint_is_rejected_and_changes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "fenced";
    let hub = FencedHub::set_up(s, id, "raise").await;
    let other_control = QueueName::Control((hub.partition + 1) % 4);

    let mut first = history_request(id, "e1", None, true, vec![started("e1")]);
    first.instance = Some((row(id, "Conformance", Running, START), Expect::Absent));
    hub.commit_under(s, first, hub.old_epoch).await;
    let history_before = load(s, id).await;

    let new_epoch = take_lease(s, hub.partition, "worker-b").await;
    let mut stale = history_request(id, "e1", Some(&history_before), false, vec![raised(1, "x")]);
    stale.instance = Some((row(id, "Conformance", Completed, START), Expect::Any));
    stale.outbound = vec![outbound(WORK, "activity"), outbound(other_control, "event")];
    stale.consumed = vec![(hub.control, hub.consumed.clone())];
    hub.assert_refused(s, &stale, new_epoch, "checkpoint", &[WORK, other_control])
        .await;

    hub.commit_under(s, stale, new_epoch).await;
    assert_eq!(
        load(s, id).await.events.len(),
        2,
        "under the current epoch the same checkpoint commits"
    );
}

/// A checkpoint whose `history.expected` does not match MUST fail with `Conflict` and leave
/// everything unchanged.
pub async fn checkpoint_with_stale_history_etag_conflicts_and_changes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "stale";
    let control = QueueName::Control(0);
    let consumed = consumable(s, control, "raise").await;
    let first = start_history(s, id, "e1", vec![]).await;
    commit(s, tagged_turn(id, Some(&first), "newer")).await;
    let current = load(s, id).await;
    let unchanged = Unchanged::note(s, id, &[WORK, control]).await;

    let mut stale = tagged_turn(id, Some(&first), "stale");
    stale.consumed = vec![(control, consumed)];
    let result = s.checkpoint(stale).await;
    assert_conflict(&result, "checkpoint from a stale history");
    unchanged
        .assert_kept(s, "checkpoint from a stale history")
        .await;

    let fresh_start = history_request(id, "e2", None, true, vec![started("e2")]);
    let result = s.checkpoint(fresh_start).await;
    assert_conflict(&result, "expecting no history where there is one");
    assert_eq!(load(s, id).await, current, "history unchanged");

    let ghost = history_request("ghost", "g1", Some(&current), false, vec![started("g1")]);
    let result = s.checkpoint(ghost).await;
    assert_conflict(&result, "expecting an ETag where there is no history");
    assert_eq!(
        s.load_history(&iid("ghost")).await.expect("load_history"),
        None
    );
}

/// Two checkpoints made from the same loaded history MUST NOT both commit, even when they
/// run concurrently.
pub async fn concurrent_checkpoints_from_same_history_commit_once(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for round in 0..5 {
        let id = format!("race-{round}");
        let loaded = start_history(s, &id, "e1", vec![]).await;
        let winner = race_two_turns(s, &id, Some(&loaded)).await;
        let after = load(s, &id).await;
        let mut expected = loaded.events.clone();
        expected.push(raised(10, winner));
        assert_eq!(
            after.events, expected,
            "only the winner's events are stored"
        );
        assert_eq!(
            visible_bodies(s, WORK).await,
            [winner],
            "only the winner's messages are sent"
        );
        let custom = instance(s, &id).await.and_then(|r| r.custom_status);
        assert_eq!(custom, Some(json(&format!("\"{winner}\""))));
    }
}

/// Two first checkpoints of the same instance (both expecting no history, as two racing
/// starts do) MUST NOT both commit.
pub async fn concurrent_first_checkpoints_commit_once(s: &dyn TaskHubStore, _clock: &ManualClock) {
    for round in 0..5 {
        let id = format!("double-start-{round}");
        let winner = race_two_turns(s, &id, None).await;
        let after = load(s, &id).await;
        assert_eq!(after.execution_id.as_str(), winner);
        assert_eq!(after.events, vec![started(winner)]);
        assert_eq!(visible_bodies(s, WORK).await, [winner]);
    }
}

/// After success, `load_history` MUST return the old events plus the new ones.
pub async fn checkpoint_appends_events_after_loaded_history(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let first = start_history(s, "append", "e1", vec![raised(1, "a"), raised(2, "b")]).await;
    let new_events = vec![raised(3, "c"), raised(4, "d")];
    commit(
        s,
        history_request("append", "e1", Some(&first), false, new_events.clone()),
    )
    .await;
    let after = load(s, "append").await;
    let mut expected = first.events.clone();
    expected.extend(new_events);
    assert_eq!(after.events, expected);
    assert_eq!(after.execution_id, first.execution_id);
    assert_ne!(
        after.etag, first.etag,
        "the history's ETag changes with every write"
    );
}

/// After a `new_execution` checkpoint, `load_history` MUST return only the new events.
pub async fn new_execution_checkpoint_replaces_old_events(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let first = start_history(s, "generations", "e1", vec![raised(1, "a"), raised(2, "b")]).await;
    let second_execution = vec![started("e2"), raised(3, "carried")];
    commit(
        s,
        history_request(
            "generations",
            "e2",
            Some(&first),
            true,
            second_execution.clone(),
        ),
    )
    .await;
    let after = load(s, "generations").await;
    assert_eq!(after.execution_id.as_str(), "e2");
    assert_eq!(
        after.events, second_execution,
        "the old execution's events are gone"
    );
    commit(
        s,
        history_request(
            "generations",
            "e2",
            Some(&after),
            false,
            vec![raised(4, "next")],
        ),
    )
    .await;
    let mut expected = second_execution;
    expected.push(raised(4, "next"));
    assert_eq!(load(s, "generations").await.events, expected);
}

/// After success, the outbound messages MUST be dequeueable, each after its delay.
pub async fn checkpoint_outbound_messages_are_dequeueable_with_delay_honoured(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let mut request = history_request("sender", "e1", None, true, vec![started("e1")]);
    request.outbound = vec![
        outbound(WORK, "activity-1"),
        OutboundMessage {
            claim: None,
            queue: QueueName::Control(1),
            message: delayed("timer", DELAY),
        },
        outbound(QueueName::Control(2), "event"),
        outbound(WORK, "activity-2"),
    ];
    commit(s, request).await;
    let mut work = visible_bodies(s, WORK).await;
    work.sort(); // the order across messages is not part of the queue contract
    assert_eq!(work, ["activity-1", "activity-2"]);
    assert_eq!(visible_bodies(s, QueueName::Control(2)).await, ["event"]);
    assert!(
        visible_bodies(s, QueueName::Control(1)).await.is_empty(),
        "a message sent with a delay is hidden at first"
    );
    let control = QueueName::Control(1);
    pass_delay_hidden(s, clock, control, DELAY, "a message sent").await;
    assert_eq!(
        visible_bodies(s, QueueName::Control(1)).await,
        ["timer"],
        "a message sent with a {DELAY:?} delay is visible a second after it"
    );
}

/// After success, the consumed messages MUST be gone.
pub async fn checkpoint_deletes_consumed_messages(s: &dyn TaskHubStore, clock: &ManualClock) {
    let control = QueueName::Control(0);
    enqueue(s, control, &["m1", "m2", "m3"]).await;
    let got = dequeue(s, control, 32).await;
    assert_eq!(got.len(), 3);
    let receipt_of = |body: &str| {
        got.iter()
            .find(|d| d.body == body)
            .map(|d| d.receipt.clone())
            .unwrap_or_else(|| panic!("{body} was dequeued"))
    };
    let mut request = history_request("consumer", "e1", None, true, vec![started("e1")]);
    request.consumed = vec![(control, receipt_of("m1")), (control, receipt_of("m3"))];
    commit(s, request).await;
    assert_eq!(
        queue_length(s, control).await,
        1,
        "two of three are deleted"
    );
    let result = s.delete(control, &receipt_of("m1")).await;
    assert_expired(&result, "a consumed message is gone");
    advance(s, clock, PAST_VISIBILITY).await;
    assert_eq!(visible_bodies(s, control).await, ["m2"]);
}

/// After success, the instance row MUST be written.
pub async fn checkpoint_writes_instance_row(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let id = "row-writer";
    let running = row(id, "Conformance", Running, START);
    let mut request = history_request(id, "e1", None, true, vec![started("e1")]);
    request.instance = Some((running.clone(), Expect::Absent));
    let outcome = commit(s, request).await;
    let stored = instance(s, id).await.expect("the row is written");
    assert_eq!(without_etag(&stored), running);
    let first_etag = outcome.instance_etag.expect("an instance ETag");
    assert_eq!(stored.etag.as_ref(), Some(&first_etag));

    let completed = InstanceRow {
        status: Completed,
        output: Some(json("\"done\"")),
        ..running
    };
    let loaded = load(s, id).await;
    let mut request = history_request(id, "e1", Some(&loaded), false, vec![raised(1, "x")]);
    request.instance = Some((completed.clone(), Expect::ETag(first_etag)));
    commit(s, request).await;
    let stored = instance(s, id).await.expect("the row is written");
    assert_eq!(without_etag(&stored), completed);
}

/// `pending_outbox` MUST be empty after a checkpoint that ran to completion.
pub async fn pending_outbox_is_empty_after_complete_checkpoint(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let mut request = history_request("outbox", "e1", None, true, vec![started("e1")]);
    request.outbound = vec![outbound(WORK, "a"), outbound(QueueName::Control(3), "b")];
    commit(s, request).await;
    let loaded = load(s, "outbox").await;
    assert!(
        loaded.pending_outbox.is_empty(),
        "pending_outbox after a complete checkpoint: {:?}",
        loaded.pending_outbox
    );
    let mut request = history_request("outbox", "e1", Some(&loaded), false, vec![raised(1, "x")]);
    request.outbound = vec![outbound(WORK, "c")];
    commit(s, request).await;
    assert!(load(s, "outbox").await.pending_outbox.is_empty());
}

/// A stale receipt among `consumed` (the message was redelivered, or already deleted) MUST
/// NOT fail the checkpoint (step 4 of the ordered checkpoint).
pub async fn stale_consumed_receipt_does_not_fail_checkpoint(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let control = QueueName::Control(0);
    enqueue(s, control, &["redelivered"]).await;
    let first = dequeue(s, control, 1).await;
    advance(s, clock, PAST_VISIBILITY).await;
    let second = dequeue(s, control, 1).await;
    assert_eq!(second.len(), 1, "the message is redelivered");
    enqueue(s, control, &["already deleted"]).await;
    let deleted = dequeue(s, control, 1).await;
    s.delete(control, &deleted[0].receipt)
        .await
        .expect("delete");

    let id = "stale-receipts";
    let mut request = history_request(id, "e1", None, true, vec![started("e1")]);
    request.consumed = vec![
        (control, first[0].receipt.clone()),
        (control, deleted[0].receipt.clone()),
    ];
    request.outbound = vec![outbound(WORK, "sent")];
    request.instance = Some((row(id, "Conformance", Running, START), Expect::Absent));
    let outcome = s.checkpoint(request).await;
    assert!(
        outcome.is_ok(),
        "stale consumed receipts must not fail the checkpoint: {outcome:?}"
    );
    assert_eq!(load(s, id).await.events, vec![started("e1")]);
    assert!(load(s, id).await.pending_outbox.is_empty());
    assert_eq!(visible_bodies(s, WORK).await, ["sent"]);
    assert!(
        instance(s, id).await.is_some(),
        "the instance row is written"
    );
    s.delete(control, &second[0].receipt)
        .await
        .expect("the redelivered message is still in place for its current holder");
}

/// The outcome carries the ETags the store now has: the history's (unchanged by a checkpoint
/// without history, which may report none) and the instance row's (the `CheckpointOutcome`
/// docs).
pub async fn checkpoint_outcome_reports_stored_etags(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let id = "etags";
    let outcome = commit(s, tagged_turn(id, None, "e1")).await;
    let loaded = load(s, id).await;
    assert_eq!(outcome.history_etag.as_ref(), Some(&loaded.etag));
    let stored = instance(s, id).await.expect("the row is written");
    assert_eq!(outcome.instance_etag, stored.etag);

    let row_only = CheckpointRequest {
        history: None,
        outbound: Vec::new(),
        ..tagged_turn(id, Some(&loaded), "row-only")
    };
    let outcome = commit(s, row_only).await;
    assert!(
        outcome.history_etag.is_none() || outcome.history_etag.as_ref() == Some(&loaded.etag),
        "a checkpoint without history leaves the history's ETag (reported, or not at all): {:?}",
        outcome.history_etag
    );
    assert_eq!(load(s, id).await.etag, loaded.etag);
    let stored = instance(s, id).await.expect("the row is written");
    assert_eq!(outcome.instance_etag, stored.etag);
    assert_eq!(stored.custom_status, Some(json("\"row-only\"")));

    let nothing = CheckpointRequest {
        history: None,
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
        fence: None,
        instance_id: iid("no-history"),
    };
    let outcome = commit(s, nothing).await;
    assert_eq!(outcome.history_etag, None, "no history, no ETag");
    assert_eq!(outcome.instance_etag, None, "no row written, no ETag");
}
