//! Cases for [`HistoryStore`](crate::HistoryStore). History is written through checkpoints.

use std::collections::HashSet;

use taskhub_core::{
    CarriedEvent, EventKind, FailureDetails, HistoryEvent, MessageId, ParentInstance, Payload,
    Timestamp,
};

use super::fixtures::{
    commit, eid, event, history_request, iid, json, load, raised, start_history, started,
};
use crate::clock::ManualClock;
use crate::store::TaskHubStore;

/// `load_history` MUST return `None` for an instance without history.
pub async fn load_history_of_unknown_instance_is_none(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let loaded = s.load_history(&iid("nobody")).await.expect("load_history");
    assert_eq!(loaded, None);
    start_history(s, "somebody", "e1", vec![]).await;
    let loaded = s.load_history(&iid("nobody")).await.expect("load_history");
    assert_eq!(loaded, None, "another instance's history is not this one's");
}

/// `load_history` MUST return the events in the order they were appended, across checkpoints.
pub async fn load_history_returns_events_in_append_order(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let first = start_history(s, "ordered", "e1", vec![raised(1, "a"), raised(2, "b")]).await;
    let second_batch = vec![raised(3, "c"), raised(4, "d"), raised(5, "e")];
    commit(
        s,
        history_request("ordered", "e1", Some(&first), false, second_batch),
    )
    .await;
    let second = load(s, "ordered").await;
    commit(
        s,
        history_request("ordered", "e1", Some(&second), false, vec![raised(6, "f")]),
    )
    .await;
    let loaded = load(s, "ordered").await;
    let mut expected = vec![started("e1")];
    expected.extend(
        ["a", "b", "c", "d", "e", "f"]
            .iter()
            .zip(1..)
            .map(|(n, t)| raised(t, n)),
    );
    assert_eq!(loaded.events, expected);
    assert_eq!(loaded.execution_id, eid("e1"));
}

/// `load_history` MUST return only the current execution's events.
pub async fn load_history_returns_only_current_execution(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let first = start_history(s, "generations", "e1", vec![raised(1, "old")]).await;
    let new_events = vec![started("e2"), raised(2, "new")];
    commit(
        s,
        history_request("generations", "e2", Some(&first), true, new_events.clone()),
    )
    .await;
    let loaded = load(s, "generations").await;
    assert_eq!(loaded.execution_id, eid("e2"));
    assert_eq!(
        loaded.events, new_events,
        "only the current execution's events"
    );
}

/// Events MUST round-trip exactly: every field of every event kind.
pub async fn every_event_kind_round_trips_exactly(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let full = every_event_kind_with_every_field();
    let names: HashSet<&str> = full.iter().map(|e| e.event.type_name()).collect();
    assert_eq!(
        names.len(),
        full.len(),
        "the fixture builds one event of each kind"
    );
    let sparse = every_event_kind_with_empty_optionals();
    for (instance, events) in [("round-trip-full", full), ("round-trip-sparse", sparse)] {
        commit(
            s,
            history_request(instance, "exec-rt", None, true, events.clone()),
        )
        .await;
        let loaded = load(s, instance).await;
        assert_eq!(loaded.events.len(), events.len(), "{instance}: event count");
        for (i, (got, want)) in loaded.events.iter().zip(&events).enumerate() {
            assert_eq!(
                got,
                want,
                "{instance}: event {i} ({}) did not round-trip",
                want.event.type_name()
            );
        }
    }
}

/// `delete_history` MUST remove all executions' events of the instance.
pub async fn delete_history_removes_every_execution(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let first = start_history(s, "purged", "e1", vec![raised(1, "x")]).await;
    commit(
        s,
        history_request("purged", "e2", Some(&first), true, vec![started("e2")]),
    )
    .await;
    start_history(s, "kept", "k1", vec![]).await;
    s.delete_history(&iid("purged"))
        .await
        .expect("delete_history");
    assert_eq!(
        s.load_history(&iid("purged")).await.expect("load_history"),
        None
    );
    assert!(
        s.load_history(&iid("kept"))
            .await
            .expect("load_history")
            .is_some(),
        "other instances keep their history"
    );
    // Nothing of the old executions is left to conflict with a fresh start.
    let fresh = start_history(s, "purged", "e3", vec![]).await;
    assert_eq!(fresh.events, vec![started("e3")]);
}

/// Deleting a missing history MUST succeed.
pub async fn delete_missing_history_succeeds(s: &dyn TaskHubStore, _clock: &ManualClock) {
    for _ in 0..2 {
        s.delete_history(&iid("never-existed"))
            .await
            .expect("deleting a missing history must succeed");
    }
}

fn failure(tag: &str) -> FailureDetails {
    FailureDetails {
        error_type: format!("{tag}Error"),
        message: format!("{tag}: \u{201c}quoted\u{201d} \u{1f4a5}\nsecond line"),
        details: Some(format!("{{\"stack\":[\"{tag}\"]}}")),
        non_retryable: true,
    }
}

/// One event of each kind, every optional field set, with awkward values.
fn every_event_kind_with_every_field() -> Vec<HistoryEvent> {
    let kinds = vec![
        EventKind::ExecutionStarted {
            name: "Orchestr\u{e4}tion".to_owned(),
            version: Some("2.1".to_owned()),
            input: json(
                "{\"nested\":{\"list\":[1,2.5,-3e10,null,true]},\"big\":18446744073709551615}",
            ),
            execution_id: eid("exec-rt"),
            parent: Some(ParentInstance {
                instance_id: iid("parent:\u{6771}\u{4eac}"),
                execution_id: eid("parent-exec"),
                task_id: 7,
                name: Some("Parent".into()),
            }),
            scheduled_start: Some(Timestamp::from_millis(1_800_000_000_001)),
            applied_event_ids: Vec::new(),
            tags: Box::new([("child".to_owned(), "\u{e4}".to_owned())].into()),
        },
        EventKind::OrchestratorStarted,
        EventKind::TaskScheduled {
            task_id: 0,
            name: "Charge".to_owned(),
            version: Some("v3".to_owned()),
            input: json("\"a string with \\\"escapes\\\" and \\u0000\""),
            attempt: 4,
            tags: [
                ("team".to_owned(), "\u{6771}\u{4eac} ops".to_owned()),
                ("empty".to_owned(), String::new()),
            ]
            .into(),
        },
        EventKind::TaskCompleted {
            task_id: 0,
            result: json("[]"),
        },
        EventKind::TaskFailed {
            task_id: 1,
            failure: failure("Task"),
        },
        EventKind::SubOrchestrationCreated {
            task_id: 2,
            name: "Child".to_owned(),
            version: Some("1".to_owned()),
            instance_id: iid("child-1"),
            // Absent: an SDK sent no input.
            input: Payload::absent(),
            tags: Box::new([("team".to_owned(), "billing".to_owned())].into()),
        },
        EventKind::SubOrchestrationCompleted {
            task_id: 2,
            result: json("42"),
        },
        EventKind::SubOrchestrationFailed {
            task_id: 3,
            failure: failure("Child"),
        },
        EventKind::TimerCreated {
            task_id: 4,
            fire_at: Timestamp::from_millis(u64::MAX / 2),
        },
        EventKind::TimerFired {
            task_id: 4,
            fire_at: Timestamp::from_millis(u64::MAX / 2),
        },
        EventKind::EventRaised {
            name: "appr\u{f6}val".to_owned(),
            input: json("{\"ok\":true}"),
        },
        EventKind::EventSent {
            task_id: 5,
            instance_id: iid("other instance"),
            name: "ping".to_owned(),
            // Not JSON: an SDK's large-payload token.
            input: Payload::from_text("blob:v1:payloads:ping \"quoted\""),
        },
        EventKind::ExecutionSuspended {
            reason: Some("maintenance".to_owned()),
        },
        EventKind::ExecutionResumed {
            reason: Some("done".to_owned()),
        },
        EventKind::ContinuedAsNew {
            input: json("{\"round\":2}"),
            version: Some("3.0".to_owned()),
            carried_events: vec![
                CarriedEvent {
                    name: "early".to_owned(),
                    input: json("1"),
                },
                CarriedEvent {
                    name: "early".to_owned(),
                    input: json("2"),
                },
            ],
            dropped_events: vec![CarriedEvent {
                name: "late".to_owned(),
                input: json("3"),
            }],
        },
        EventKind::ExecutionCompleted {
            result: json("\"finished\""),
        },
        EventKind::ExecutionFailed {
            failure: failure("Orchestration"),
        },
        EventKind::ExecutionTerminated {
            reason: "stopped by \u{1f916}".to_owned(),
            output: Some(json("{\"a\":1}")),
        },
        EventKind::OrchestratorCompleted,
    ];
    kinds
        .into_iter()
        .zip(0_u64..)
        .map(|(kind, i)| HistoryEvent {
            timestamp: Timestamp::from_millis(1_700_000_000_000 + i * 1_001),
            message_id: Some(MessageId::from_stored(format!("message-{i}"))),
            trace: (i == 0)
                .then(|| "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned()),
            event: kind,
        })
        .collect()
}

/// One event of each kind that has optional fields, with them empty or at their defaults.
fn every_event_kind_with_empty_optionals() -> Vec<HistoryEvent> {
    let minimal_failure = FailureDetails::new("E", "");
    vec![
        started("exec-rt"),
        event(
            1,
            EventKind::TaskScheduled {
                task_id: 0,
                name: "A".to_owned(),
                version: None,
                input: json("null"),
                attempt: 1,
                tags: Default::default(),
            },
        ),
        event(
            2,
            EventKind::TaskFailed {
                task_id: 0,
                failure: minimal_failure.clone(),
            },
        ),
        event(
            3,
            EventKind::SubOrchestrationCreated {
                task_id: 1,
                name: "B".to_owned(),
                version: None,
                instance_id: iid("b"),
                input: json("null"),
                tags: Default::default(),
            },
        ),
        event(4, EventKind::ExecutionSuspended { reason: None }),
        event(5, EventKind::ExecutionResumed { reason: None }),
        event(
            6,
            EventKind::ContinuedAsNew {
                input: json("null"),
                version: None,
                carried_events: Vec::new(),
                dropped_events: Vec::new(),
            },
        ),
        event(
            7,
            EventKind::ExecutionFailed {
                failure: minimal_failure,
            },
        ),
        HistoryEvent {
            timestamp: Timestamp::EPOCH,
            message_id: None,
            trace: None,
            event: EventKind::ExecutionTerminated {
                reason: String::new(),
                output: None,
            },
        },
    ]
}
