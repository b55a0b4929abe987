#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;
use crate::proto::history_event::EventType as E;
use crate::proto::{ActivityRequest, OrchestratorRequest, TaskCompletedEvent, TaskScheduledEvent};

fn scheduled(id: i32) -> HistoryEvent {
    HistoryEvent {
        event_id: id,
        event_type: Some(E::TaskScheduled(TaskScheduledEvent {
            name: format!("Activity{id}"),
            input: Some(id.to_string()),
            ..TaskScheduledEvent::default()
        })),
        ..HistoryEvent::default()
    }
}

fn completed(id: i32) -> HistoryEvent {
    HistoryEvent {
        event_id: -1,
        event_type: Some(E::TaskCompleted(TaskCompletedEvent {
            task_scheduled_id: id,
            result: Some(format!("\"r{id}\"")),
        })),
        ..HistoryEvent::default()
    }
}

fn turn(past: Vec<HistoryEvent>) -> WorkItem {
    WorkItem {
        request: Some(work_item::Request::OrchestratorRequest(
            OrchestratorRequest {
                instance_id: "i-1".into(),
                execution_id: Some("e-1".into()),
                past_events: past,
                new_events: vec![completed(7), completed(8)],
                ..OrchestratorRequest::default()
            },
        )),
        completion_token: "tok-42".into(),
    }
}

/// Past events encoded in two chunks, as the cache appends them turn by turn.
fn encoded(past: &[HistoryEvent]) -> EncodedEvents {
    let (a, b) = past.split_at(past.len() / 2);
    let mut first = EncodedEvents::new();
    first.extend(a);
    let mut second = EncodedEvents::new();
    second.extend(b);
    first.append(&second);
    first
}

#[test]
fn encoded_past_events_reach_the_worker_as_the_plain_request() {
    let past: Vec<_> = (0..9).map(scheduled).collect();
    let plain = turn(past.clone());
    let outgoing = OutgoingWorkItem {
        item: turn(Vec::new()),
        past: encoded(&past),
    };
    assert_eq!(outgoing.past.len(), 9);
    assert_eq!(outgoing.past.chunks(), 2);
    let bytes = outgoing.encode_to_vec();
    assert_eq!(bytes.len(), outgoing.encoded_len());
    // What an SDK decodes: the same WorkItem, the past events in their order.
    assert_eq!(WorkItem::decode(bytes.as_slice()).unwrap(), plain);
    assert_eq!(outgoing.clone().into_work_item().unwrap(), plain);
    // As its own type too (decoded whole into `item`).
    let back = OutgoingWorkItem::decode(bytes.as_slice()).unwrap();
    assert_eq!(back.item, plain);
    assert!(back.past.is_empty());
}

#[test]
fn encoded_past_events_go_before_those_already_in_the_request() {
    let past: Vec<_> = (0..4).map(scheduled).collect();
    let mut head = EncodedEvents::new();
    head.extend(&past[..3]);
    let outgoing = OutgoingWorkItem {
        item: turn(vec![past[3].clone()]),
        past: head,
    };
    let decoded = WorkItem::decode(outgoing.encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded, turn(past.clone()));
    assert_eq!(outgoing.into_work_item().unwrap(), turn(past));
}

#[test]
fn joined_chunks_keep_the_events_and_their_order() {
    let past: Vec<_> = (0..10).map(scheduled).collect();
    let mut e = encoded(&past);
    let before = e.encoded_bytes();
    e.compact();
    assert_eq!(e.chunks(), 1);
    assert_eq!(e.len(), 10);
    assert_eq!(e.encoded_bytes(), before);
    assert_eq!(e.decode().unwrap(), past);
}

#[test]
fn other_work_items_and_empty_pasts_encode_as_the_plain_item() {
    let activity = WorkItem {
        request: Some(work_item::Request::ActivityRequest(ActivityRequest {
            name: "Noop".into(),
            task_id: 3,
            ..ActivityRequest::default()
        })),
        completion_token: "t".into(),
    };
    for item in [activity, turn(vec![scheduled(1)]), WorkItem::default()] {
        let outgoing = OutgoingWorkItem::from(item.clone());
        assert_eq!(outgoing.encode_to_vec(), item.encode_to_vec());
        assert_eq!(outgoing.encoded_len(), item.encoded_len());
    }
    // Nothing to splice into a work item that is not a turn: it goes as it is.
    let mut past = EncodedEvents::new();
    past.extend(&[scheduled(1)]);
    let ping = OutgoingWorkItem {
        item: WorkItem {
            request: Some(work_item::Request::HealthPing(crate::proto::HealthPing {})),
            completion_token: String::new(),
        },
        past,
    };
    assert_eq!(ping.encode_to_vec(), ping.item.encode_to_vec());
}

fn rewound(reason: &str) -> HistoryEvent {
    HistoryEvent {
        event_id: -1,
        event_type: Some(E::ExecutionRewound(crate::proto::ExecutionRewoundEvent {
            reason: Some(reason.into()),
            ..crate::proto::ExecutionRewoundEvent::default()
        })),
        ..HistoryEvent::default()
    }
}

#[test]
fn rewinds_are_left_out_for_a_worker_that_cannot_read_them() {
    // Two rewinds in the encoded past (in both chunks), one in the new events.
    let past = vec![
        scheduled(0),
        rewound("first"),
        completed(0),
        scheduled(1),
        rewound("second"),
        completed(1),
    ];
    let mut item = turn(Vec::new());
    if let Some(work_item::Request::OrchestratorRequest(r)) = &mut item.request {
        r.new_events.insert(0, rewound("third"));
    }
    let mut outgoing = OutgoingWorkItem {
        item,
        past: encoded(&past),
    };
    outgoing.strip_rewinds();
    assert_eq!(outgoing.past.len(), 4);
    let plain = outgoing.into_work_item().unwrap();
    let Some(work_item::Request::OrchestratorRequest(r)) = plain.request else {
        panic!("not a turn");
    };
    assert_eq!(
        r.past_events,
        vec![scheduled(0), completed(0), scheduled(1), completed(1)]
    );
    assert_eq!(r.new_events, vec![completed(7), completed(8)]);
}

#[test]
fn a_past_without_rewinds_is_kept_as_it_is() {
    let past: Vec<_> = (0..6).map(scheduled).collect();
    let enc = encoded(&past);
    assert!(enc.without_case(EXECUTION_REWOUND_FIELD).is_none());
    let mut outgoing = OutgoingWorkItem {
        item: turn(Vec::new()),
        past: enc.clone(),
    };
    outgoing.strip_rewinds();
    // The same chunks, shared: nothing was copied.
    assert_eq!(outgoing.past, enc);
    assert_eq!(outgoing.past.chunks(), 2);
}
