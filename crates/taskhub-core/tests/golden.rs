//! Pins the storage format: the golden files hold one record of every history event kind and
//! messages, written by format version 1. They must keep decoding, and re-encoding them must give
//! the same bytes. Regenerate (only for a deliberate, versioned format change) with
//! `TASKHUB_BLESS=1 cargo test -p taskhub-core --test golden`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

use std::collections::BTreeSet;

use taskhub_core::format::{
    decode_event, decode_message, encode_event, encode_message, FORMAT_VERSION,
};
use taskhub_core::*;

const EVENTS: &str = include_str!("golden/history_v1.jsonl");
const MESSAGES: &str = include_str!("golden/messages_v1.jsonl");

const ALL_KINDS: [&str; 19] = [
    "ExecutionStarted",
    "ExecutionCompleted",
    "ExecutionFailed",
    "ExecutionTerminated",
    "ContinuedAsNew",
    "OrchestratorStarted",
    "OrchestratorCompleted",
    "TaskScheduled",
    "TaskCompleted",
    "TaskFailed",
    "SubOrchestrationCreated",
    "SubOrchestrationCompleted",
    "SubOrchestrationFailed",
    "TimerCreated",
    "TimerFired",
    "EventRaised",
    "EventSent",
    "ExecutionSuspended",
    "ExecutionResumed",
];

fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

fn p(json: &str) -> Payload {
    Payload::from_json(json).unwrap()
}

fn sample_events() -> Vec<HistoryEvent> {
    let t = Timestamp::from_millis(1_700_000_000_000);
    let exec = ExecutionId::new("0f8fad5bd9cb469fa16570867728950e").unwrap();
    let mut failure = FailureDetails::new("CardDeclined", "card declined");
    failure.details = Some("code 51".into());
    failure.non_retryable = true;
    let kinds = vec![
        EventKind::OrchestratorStarted,
        EventKind::ExecutionStarted {
            name: "Checkout".into(),
            version: Some("2".into()),
            input: p(r#"{"order":42}"#),
            execution_id: exec.clone(),
            parent: Some(ParentInstance {
                instance_id: id("parent-1"),
                execution_id: exec.clone(),
                task_id: 3,
                name: None,
            }),
            scheduled_start: Some(t),
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
        EventKind::TaskScheduled {
            task_id: 0,
            name: "Charge".into(),
            version: Some("1".into()),
            input: p("12.5"),
            attempt: 2,
            tags: Default::default(),
        },
        EventKind::TaskCompleted {
            task_id: 0,
            result: p(r#""ok""#),
        },
        EventKind::TaskFailed {
            task_id: 1,
            failure: failure.clone(),
        },
        EventKind::SubOrchestrationCreated {
            task_id: 2,
            name: "Ship".into(),
            version: None,
            instance_id: id("order-42:2"),
            input: p("null"),
            tags: Default::default(),
        },
        EventKind::SubOrchestrationCompleted {
            task_id: 2,
            result: p("[1,2]"),
        },
        EventKind::SubOrchestrationFailed {
            task_id: 3,
            failure: FailureDetails::new("X", "y"),
        },
        EventKind::TimerCreated {
            task_id: 4,
            fire_at: t,
        },
        EventKind::TimerFired {
            task_id: 4,
            fire_at: t,
        },
        EventKind::EventRaised {
            name: "approval".into(),
            input: p("true"),
        },
        EventKind::EventSent {
            task_id: 5,
            instance_id: id("other"),
            name: "ping".into(),
            input: p("{}"),
        },
        EventKind::ExecutionSuspended {
            reason: Some("maintenance".into()),
        },
        EventKind::ExecutionResumed { reason: None },
        EventKind::ExecutionCompleted {
            result: p(r#"{"total":12.5}"#),
        },
        EventKind::ExecutionFailed { failure },
        EventKind::ExecutionTerminated {
            reason: "operator".into(),
            output: None,
        },
        EventKind::ContinuedAsNew {
            input: p("7"),
            version: None,
            carried_events: vec![CarriedEvent {
                name: "add".into(),
                input: p("1"),
            }],
            dropped_events: Vec::new(),
        },
        EventKind::OrchestratorCompleted,
        // Added after the first v1 files: a continue-as-new that dropped events names them
        // (an optional field, so the lines above still decode unchanged).
        EventKind::ContinuedAsNew {
            input: p("8"),
            version: None,
            carried_events: Vec::new(),
            dropped_events: vec![CarriedEvent {
                name: "add".into(),
                input: p("2"),
            }],
        },
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, event)| HistoryEvent {
            timestamp: t.saturating_add(std::time::Duration::from_millis(i as u64)),
            message_id: (i % 3 == 0).then(|| MessageId::from_stored(format!("msg-{i}"))),
            trace: None,
            event,
        })
        .collect()
}

fn sample_messages() -> Vec<Message> {
    let exec = ExecutionId::new("e1").unwrap();
    vec![
        Message::from_client(
            id("order-42"),
            EventKind::EventRaised {
                name: "approval".into(),
                input: p("true"),
            },
            Timestamp::from_millis(5),
        ),
        Message {
            id: MessageId::from_stored("4b1a"),
            target: id("order-42"),
            execution_id: Some(exec.clone()),
            sender: Some(Sender {
                instance_id: id("parent-1"),
                execution_id: exec,
            }),
            episode: 3,
            enqueued_at: Timestamp::from_millis(1_700_000_000_000),
            target_partition: None,
            traceparent: None,
            order: None,
            event: EventKind::TaskScheduled {
                task_id: 0,
                name: "Charge".into(),
                version: None,
                input: p("1"),
                attempt: 1,
                tags: Default::default(),
            },
        },
        Message {
            id: MessageId::from_stored("work"),
            target: id("order-42"),
            execution_id: None,
            sender: None,
            episode: 4,
            enqueued_at: Timestamp::from_millis(9),
            target_partition: Some(2),
            traceparent: None,
            order: None,
            event: EventKind::TaskScheduled {
                task_id: 1,
                name: "Ship".into(),
                version: None,
                input: p("2"),
                attempt: 3,
                tags: Default::default(),
            },
        },
        // Added with the trace context: the lines above, written before it existed, still
        // decode (to `traceparent: None`) and re-encode identically.
        Message {
            id: MessageId::from_stored("traced"),
            target: id("order-42"),
            execution_id: None,
            sender: None,
            episode: 5,
            enqueued_at: Timestamp::from_millis(11),
            target_partition: Some(1),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            order: None,
            event: EventKind::TaskScheduled {
                task_id: 2,
                name: "Ship".into(),
                version: None,
                input: p("3"),
                attempt: 1,
                tags: Default::default(),
            },
        },
        // Added with task tags (an SDK's `ScheduleTaskAction.tags`): the lines above, written
        // before they existed, still decode (to no tags) and re-encode identically.
        Message {
            id: MessageId::from_stored("tagged"),
            target: id("order-42"),
            execution_id: Some(exec_tagged()),
            sender: None,
            episode: 6,
            enqueued_at: Timestamp::from_millis(13),
            target_partition: Some(1),
            traceparent: None,
            order: None,
            event: EventKind::TaskScheduled {
                task_id: 3,
                name: "Ship".into(),
                version: None,
                input: p("4"),
                attempt: 1,
                tags: [
                    ("team".to_owned(), "ops".to_owned()),
                    ("tier".to_owned(), "gold".to_owned()),
                ]
                .into(),
            },
        },
        // Added with a parent's tags for its child (an SDK's
        // `CreateSubOrchestrationAction.tags`), carried by the child's start.
        Message {
            id: MessageId::from_stored("child"),
            target: id("order-42:0001"),
            execution_id: Some(exec_tagged()),
            sender: Some(Sender {
                instance_id: id("order-42"),
                execution_id: exec_tagged(),
            }),
            episode: 7,
            enqueued_at: Timestamp::from_millis(15),
            target_partition: Some(0),
            traceparent: None,
            order: None,
            event: EventKind::ExecutionStarted {
                name: "Ship".into(),
                version: None,
                input: p("5"),
                execution_id: exec_tagged(),
                parent: Some(ParentInstance {
                    instance_id: id("order-42"),
                    execution_id: exec_tagged(),
                    task_id: 1,
                    name: Some("Checkout".into()),
                }),
                scheduled_start: None,
                applied_event_ids: Vec::new(),
                tags: Box::new([("team".to_owned(), "ops".to_owned())].into()),
            },
        },
    ]
    .into_iter()
    .map(|mut m| {
        m.id = MessageId::from_stored(format!("fixed-{}", m.episode));
        m
    })
    .collect()
}

#[test]
fn golden_files_decode_and_reencode_identically() {
    if std::env::var_os("TASKHUB_BLESS").is_some() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
        let ev: Vec<String> = sample_events().iter().map(encode_event).collect();
        std::fs::write(format!("{dir}/history_v1.jsonl"), ev.join("\n") + "\n").unwrap();
        let ms: Vec<String> = sample_messages().iter().map(encode_message).collect();
        std::fs::write(format!("{dir}/messages_v1.jsonl"), ms.join("\n") + "\n").unwrap();
        return;
    }
    assert_eq!(
        FORMAT_VERSION, 1,
        "a new format version needs new golden files; keep the v1 ones"
    );
    let decoded: Vec<HistoryEvent> = EVENTS.lines().map(|l| decode_event(l).unwrap()).collect();
    assert_eq!(decoded, sample_events());
    for (line, ev) in EVENTS.lines().zip(&decoded) {
        assert_eq!(encode_event(ev), line);
    }
    let kinds: BTreeSet<&str> = decoded.iter().map(|e| e.event.type_name()).collect();
    assert_eq!(
        kinds,
        ALL_KINDS.into_iter().collect(),
        "golden file must hold every event kind"
    );

    let msgs: Vec<Message> = MESSAGES
        .lines()
        .map(|l| decode_message(l).unwrap())
        .collect();
    assert_eq!(msgs, sample_messages());
    for (line, m) in MESSAGES.lines().zip(&msgs) {
        assert_eq!(encode_message(m), line);
    }
}

fn exec_tagged() -> ExecutionId {
    ExecutionId::new("e2").unwrap()
}

/// A task's tags are an optional field of `TaskScheduled`: absent in the records written
/// before them (they decode with none), written only when there are some, and read back as
/// written.
#[test]
fn task_tags_are_an_optional_field_of_task_scheduled() {
    let scheduled = EVENTS
        .lines()
        .map(|l| decode_event(l).unwrap())
        .find(|e| matches!(e.event, EventKind::TaskScheduled { .. }))
        .unwrap();
    let mut tagged = scheduled.clone();
    if let EventKind::TaskScheduled { tags, .. } = &mut tagged.event {
        assert!(tags.is_empty());
        tags.insert("team".into(), "ops".into());
    }
    let line = encode_event(&tagged);
    assert!(line.contains(r#""tags":{"team":"ops"}"#), "{line}");
    assert_eq!(decode_event(&line).unwrap(), tagged);
    assert!(!encode_event(&scheduled).contains("tags"));
}

#[test]
fn invalid_instance_id_in_stored_message_is_a_clear_error() {
    let line = MESSAGES
        .lines()
        .next()
        .unwrap()
        .replace("order-42", "bad/id");
    let err = decode_message(&line).unwrap_err();
    assert!(err.to_string().contains("invalid instance ID"), "{err}");
}

/// The event IDs a continue-as-new carries into the next execution are an optional field of
/// `ExecutionStarted`: absent in the v1 golden records (they decode with none), and written
/// only when there are some, so every earlier record keeps its bytes.
#[test]
fn carried_event_ids_are_an_optional_field_of_the_start() {
    let start = EVENTS
        .lines()
        .map(|l| decode_event(l).unwrap())
        .find(|e| matches!(e.event, EventKind::ExecutionStarted { .. }))
        .unwrap();
    let mut carried = start.clone();
    let ids = vec![MessageId::from_stored("m1"), MessageId::from_stored("m2")];
    if let EventKind::ExecutionStarted {
        applied_event_ids, ..
    } = &mut carried.event
    {
        assert!(applied_event_ids.is_empty());
        applied_event_ids.clone_from(&ids);
    }
    let line = encode_event(&carried);
    assert!(
        line.contains(r#""applied_event_ids":["m1","m2"]"#),
        "{line}"
    );
    assert_eq!(decode_event(&line).unwrap(), carried);
    assert!(!encode_event(&start).contains("applied_event_ids"));
}
