//! Cases for a history replaced under the same execution ID (a rewind: `HistoryWrite`'s
//! `new_execution` with the stored `execution_id`): the replace leaves exactly the new events,
//! fewer or more than before, is fenced and conditional on the loaded ETag like any checkpoint,
//! and later appends continue from it.

use taskhub_core::OrchestrationStatus::{Failed, Running};
use taskhub_core::{EventKind, FailureDetails, HistoryEvent};

use super::fixtures::assert_conflict;
use super::fixtures::{
    commit, event, history_request, instance, json, load, outbound, queue_length, raised, row,
    start_history, take_lease, visible_bodies, START,
};
use super::refused::{consumable, FencedHub, Unchanged};
use crate::checkpoint::CheckpointRequest;
use crate::clock::ManualClock;
use crate::error::StorageError;
use crate::history::HistorySnapshot;
use crate::instances::{Expect, InstanceRow};
use crate::queue::QueueName;
use crate::store::TaskHubStore;

const WORK: QueueName = QueueName::WorkItems;

/// More events than one Azure table batch (100 operations) holds, so that a replace by or of
/// this many goes beyond the batch that commits it.
const MANY: u64 = 120;

fn rewound(offset_ms: u64) -> HistoryEvent {
    event(
        offset_ms,
        EventKind::ExecutionRewound {
            reason: Some("conformance".to_owned()),
            rewound_tasks: vec![1],
        },
    )
}

fn failed(offset_ms: u64) -> HistoryEvent {
    event(
        offset_ms,
        EventKind::ExecutionFailed {
            failure: FailureDetails::new("Boom", "the activity failed"),
        },
    )
}

/// `count` raised events named `prefix-N`, from offset `from`.
fn raised_run(prefix: &str, from: u64, count: u64) -> Vec<HistoryEvent> {
    (0..count)
        .map(|i| raised(from + i, &format!("{prefix}-{i}")))
        .collect()
}

/// A failed execution `e1` of `id`: started, `middle` events, `ExecutionFailed`.
async fn failed_history(
    s: &dyn TaskHubStore,
    id: &str,
    middle: Vec<HistoryEvent>,
) -> HistorySnapshot {
    let mut events = middle;
    events.push(failed(9_000));
    start_history(s, id, "e1", events).await
}

/// A replace of `loaded` under its own execution ID by `events`.
fn replace(id: &str, loaded: &HistorySnapshot, events: Vec<HistoryEvent>) -> CheckpointRequest {
    history_request(id, loaded.execution_id.as_str(), Some(loaded), true, events)
}

/// The first `keep` events of `loaded`, then `ExecutionRewound`, then `more`.
fn rewound_history(
    loaded: &HistorySnapshot,
    keep: usize,
    more: Vec<HistoryEvent>,
) -> Vec<HistoryEvent> {
    let mut events: Vec<HistoryEvent> = loaded.events.iter().take(keep).cloned().collect();
    events.push(rewound(10_000));
    events.extend(more);
    events
}

/// Replaces the history with `events` under the same execution ID and checks that exactly
/// they are stored, under a new ETag, with no pending outbox.
async fn replace_and_check(
    s: &dyn TaskHubStore,
    id: &str,
    loaded: &HistorySnapshot,
    events: Vec<HistoryEvent>,
    what: &str,
) -> HistorySnapshot {
    let outcome = commit(s, replace(id, loaded, events.clone())).await;
    let after = load(s, id).await;
    assert_eq!(
        after.execution_id, loaded.execution_id,
        "{what}: the execution ID is kept"
    );
    assert_eq!(
        after.events.len(),
        events.len(),
        "{what}: {} events stored, {} written",
        after.events.len(),
        events.len()
    );
    assert_eq!(after.events, events, "{what}: exactly the new events");
    assert_ne!(after.etag, loaded.etag, "{what}: a new ETag");
    assert_eq!(
        outcome.history_etag.as_ref(),
        Some(&after.etag),
        "{what}: the outcome reports the stored ETag"
    );
    assert!(
        after.pending_outbox.is_empty(),
        "{what}: no pending outbox after a complete checkpoint"
    );
    after
}

/// A `new_execution` write under the stored execution ID MUST replace the current execution's
/// events (`HistoryWrite::new_execution`): `load_history` returns exactly the new events, fewer
/// than before and also more, beyond one table batch either way, each time under a new ETag;
/// the checkpoint's messages and instance row are written with it.
pub async fn replace_under_the_same_execution_id_leaves_exactly_the_new_events(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "rewound";
    let first = failed_history(s, id, raised_run("ok", 1, 6)).await;
    assert_eq!(first.events.len(), 8);

    // Fewer: the started event and three successes kept, the rest dropped; with the turn's
    // messages and row, as a rewind turn writes them.
    let fewer = rewound_history(&first, 4, vec![raised(10_001, "again")]);
    let mut request = replace(id, &first, fewer.clone());
    request.outbound = vec![outbound(WORK, "run again")];
    request.instance = Some((row(id, "Conformance", Running, START), Expect::Absent));
    commit(s, request).await;
    let after = load(s, id).await;
    assert_eq!(after.events, fewer, "fewer: exactly the new events");
    assert_eq!(after.execution_id, first.execution_id);
    assert_ne!(after.etag, first.etag, "fewer: a new ETag");
    assert!(after.pending_outbox.is_empty());
    assert_eq!(visible_bodies(s, WORK).await, ["run again"]);
    assert_eq!(
        instance(s, id).await.map(|r| r.status),
        Some(Running),
        "the row is written with the replace"
    );

    // More than before, beyond one table batch.
    let more = rewound_history(&after, 2, raised_run("more", 20_000, MANY));
    let after = replace_and_check(s, id, &after, more, "more").await;

    // From many to a few: none of the many is left behind.
    let few = rewound_history(&after, 1, vec![raised(30_000, "few")]);
    let after = replace_and_check(s, id, &after, few, "many to few").await;

    // From a few to many again, and to nothing but the start.
    let many = rewound_history(&after, 1, raised_run("again", 40_000, MANY + 7));
    let after = replace_and_check(s, id, &after, many, "few to many").await;
    let start_only = after.events[..1].to_vec();
    replace_and_check(s, id, &after, start_only, "to the start alone").await;
}

/// A replace whose `expected` ETag is not the stored one MUST fail with `Conflict` and change
/// nothing: not the history, the row, the queues or the consumed messages. The replace made
/// from the current history then commits.
pub async fn replace_with_a_stale_etag_conflicts_and_changes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "stale-rewind";
    let control = QueueName::Control(0);
    let consumed = consumable(s, control, "rewind request").await;
    let loaded = start_history(s, id, "e1", raised_run("ok", 1, 3)).await;
    let mut failing = history_request(id, "e1", Some(&loaded), false, vec![failed(9_000)]);
    failing.instance = Some((row(id, "Conformance", Failed, START), Expect::Absent));
    commit(s, failing).await;
    let current = load(s, id).await;
    let unchanged = Unchanged::note(s, id, &[WORK, control]).await;

    // Made from the history before its last append: stale, whether fewer or more events.
    for (what, events) in [
        ("fewer", rewound_history(&loaded, 2, vec![])),
        (
            "more",
            rewound_history(&loaded, 4, raised_run("more", 20_000, MANY)),
        ),
    ] {
        let mut stale = replace(id, &loaded, events);
        stale.outbound = vec![outbound(WORK, "run again")];
        stale.instance = Some((row(id, "Conformance", Running, START), Expect::Any));
        stale.consumed = vec![(control, consumed.clone())];
        let result = s.checkpoint(stale).await;
        assert_conflict(&result, &format!("{what}: a replace from a stale history"));
        unchanged.assert_kept(s, what).await;
    }

    let fresh = rewound_history(&current, 3, vec![raised(10_001, "again")]);
    let mut request = replace(id, &current, fresh.clone());
    request.consumed = vec![(control, consumed)];
    commit(s, request).await;
    assert_eq!(
        load(s, id).await.events,
        fresh,
        "from the current history it commits"
    );
    assert_eq!(queue_length(s, control).await, 0, "and consumes");
}

/// A replace under a lease epoch that is not the partition's current one MUST fail with
/// `Fenced` and change nothing; under the current epoch the same replace commits.
pub async fn replace_under_an_old_lease_epoch_is_fenced_and_changes_nothing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = "fenced-rewind";
    let hub = FencedHub::set_up(s, id, "rewind request").await;
    let mut events = raised_run("ok", 1, 3);
    events.push(failed(9_000));
    events.insert(0, super::fixtures::started("e1"));
    let mut first = history_request(id, "e1", None, true, events);
    first.instance = Some((row(id, "Conformance", Failed, START), Expect::Absent));
    hub.commit_under(s, first, hub.old_epoch).await;
    let before = load(s, id).await;

    let new_epoch = take_lease(s, hub.partition, "worker-b").await;
    let events = rewound_history(&before, 3, raised_run("again", 20_000, MANY));
    let mut stale = replace(id, &before, events.clone());
    stale.outbound = vec![outbound(WORK, "run again")];
    stale.instance = Some((
        InstanceRow {
            custom_status: Some(json("\"rewound\"")),
            ..row(id, "Conformance", Running, START)
        },
        Expect::Any,
    ));
    stale.consumed = vec![(hub.control, hub.consumed.clone())];
    hub.assert_refused(s, &stale, new_epoch, "replace", &[WORK])
        .await;

    hub.commit_under(s, stale, new_epoch).await;
    assert_eq!(
        load(s, id).await.events,
        events,
        "under the current epoch the same replace commits"
    );
    assert_eq!(
        instance(s, id).await.and_then(|r| r.custom_status),
        Some(json("\"rewound\""))
    );
}

/// After a replace, an append from the replaced history's ETag MUST continue from the new
/// events (`load_history` returns the new events plus the appended ones), and an append or a
/// replace made from the history before the replace MUST fail with `Conflict`.
pub async fn append_after_a_replace_continues_from_the_new_events(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for (id, middle) in [
        // Fewer events after the replace than before it: an append numbered after the old
        // count would leave a gap.
        ("append-after-fewer", raised_run("ok", 1, MANY)),
        // More after than before: one numbered after the old count would overwrite.
        ("append-after-more", raised_run("ok", 1, 2)),
    ] {
        let old = failed_history(s, id, middle).await;
        let keep = if old.events.len() > 10 { 3 } else { 2 };
        let more = if old.events.len() > 10 {
            vec![]
        } else {
            raised_run("more", 20_000, 10)
        };
        let replaced = rewound_history(&old, keep, more);
        let after = replace_and_check(s, id, &old, replaced.clone(), id).await;

        for (what, request) in [
            (
                "an append from before the replace",
                history_request(id, "e1", Some(&old), false, vec![raised(50_000, "late")]),
            ),
            (
                "a second replace from before it",
                replace(id, &old, rewound_history(&old, 1, vec![])),
            ),
        ] {
            let result = s.checkpoint(request).await;
            assert_conflict(&result, &format!("{id}: {what}"));
            assert_eq!(load(s, id).await, after, "{id}: {what}: history unchanged");
        }

        let next = vec![raised(60_000, "next"), raised(60_001, "then")];
        commit(
            s,
            history_request(id, "e1", Some(&after), false, next.clone()),
        )
        .await;
        let appended = load(s, id).await;
        let mut expected = replaced.clone();
        expected.extend(next);
        assert_eq!(
            appended.events, expected,
            "{id}: the append follows the new events"
        );
        assert_ne!(appended.etag, after.etag);

        let last = vec![raised(70_000, "last")];
        commit(
            s,
            history_request(id, "e1", Some(&appended), false, last.clone()),
        )
        .await;
        expected.extend(last);
        assert_eq!(load(s, id).await.events, expected, "{id}: and the next one");
    }
}

/// Two replaces, or a replace and an append, made from the same loaded history MUST NOT both
/// commit: one wins, the other fails with `Conflict`, and only the winner's events are stored.
pub async fn racing_replace_and_append_from_the_same_history_commit_once(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for round in 0..4 {
        let id = format!("rewind-race-{round}");
        let loaded = failed_history(s, &id, raised_run("ok", 1, 3)).await;
        let replaced = rewound_history(&loaded, 2 + round % 2, raised_run("r", 20_000, 3));
        let other_events = if round % 2 == 0 {
            rewound_history(&loaded, 1, vec![raised(30_000, "other")])
        } else {
            vec![raised(30_000, "appended")]
        };
        let other = history_request(
            &id,
            "e1",
            Some(&loaded),
            round % 2 == 0,
            other_events.clone(),
        );
        let (a, b) = tokio::join!(
            s.checkpoint(replace(&id, &loaded, replaced.clone())),
            s.checkpoint(other),
        );
        let stored = load(s, &id).await.events;
        match (&a, &b) {
            (Ok(_), Err(StorageError::Conflict { .. })) => {
                assert_eq!(stored, replaced, "{id}: the replace won");
            }
            (Err(StorageError::Conflict { .. }), Ok(_)) => {
                let mut expected = other_events.clone();
                if round % 2 == 1 {
                    expected = loaded.events.clone();
                    expected.extend(other_events.clone());
                }
                assert_eq!(stored, expected, "{id}: the other write won");
            }
            _ => panic!("{id}: exactly one of two writes from one history commits: {a:?}, {b:?}"),
        }
    }
}
