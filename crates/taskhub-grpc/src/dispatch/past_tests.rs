#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;

use taskhub::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};

use super::*;

fn instance(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

fn started(execution: &str) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(1_700_000_000_000),
        EventKind::ExecutionStarted {
            name: "FanOut".into(),
            version: None,
            input: Payload::from_json("3").unwrap(),
            execution_id: ExecutionId::new(execution).unwrap(),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
    )
}

fn scheduled(task_id: u64) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(1_700_000_000_000 + task_id),
        EventKind::TaskScheduled {
            task_id,
            name: "Noop".into(),
            version: None,
            input: Payload::from_json(task_id.to_string()).unwrap(),
            attempt: 1,
            tags: Default::default(),
        },
    )
}

/// A history of `n` events: the start and `n - 1` scheduled tasks.
fn history(execution: &str, n: u64) -> Vec<HistoryEvent> {
    std::iter::once(started(execution))
        .chain((1..n).map(scheduled))
        .collect()
}

fn work(id: &str, execution: &str, past: Vec<HistoryEvent>) -> OrchestrationWork {
    OrchestrationWork::new(
        instance(id),
        ExecutionId::new(execution).unwrap(),
        "FanOut".into(),
        Arc::new(past),
        Vec::new(),
    )
}

/// What a turn without the cache sends: every past event converted and encoded.
fn fresh(w: &OrchestrationWork) -> Vec<crate::proto::HistoryEvent> {
    w.past
        .iter()
        .map(|e| event_to_proto_with_entities(e, &w.instance, &EntityRequests::default()))
        .collect()
}

fn past(cache: &Mutex<PastCache>, w: &OrchestrationWork) -> EncodedEvents {
    past_of(cache, w, &EntityRequests::default())
}

fn cache(max_bytes: usize) -> Mutex<PastCache> {
    Mutex::new(PastCache::new(max_bytes))
}

#[test]
fn a_later_turn_encodes_only_the_events_new_to_it() {
    let cache = cache(1 << 20);
    let first = work("i", "e1", history("e1", 10));
    let a = past(&cache, &first);
    assert_eq!((a.len(), a.chunks()), (10, 1));
    assert_eq!(a.decode().unwrap(), fresh(&first));
    let second = work("i", "e1", history("e1", 25));
    let b = past(&cache, &second);
    // The first ten shared as they were, the fifteen new in a chunk of their own.
    assert_eq!((b.len(), b.chunks()), (25, 2));
    assert_eq!(b.decode().unwrap(), fresh(&second));
    // The same past again: nothing to add.
    let c = past(&cache, &second);
    assert_eq!(c, b);
    assert_eq!(cache.lock().unwrap().bytes(), b.encoded_bytes());
}

#[test]
fn a_first_turn_with_no_past_is_followed_by_cached_ones() {
    let cache = cache(1 << 20);
    assert!(past(&cache, &work("i", "e1", Vec::new())).is_empty());
    let w = work("i", "e1", history("e1", 3));
    assert_eq!(past(&cache, &w).decode().unwrap(), fresh(&w));
    let w = work("i", "e1", history("e1", 5));
    let got = past(&cache, &w);
    assert_eq!(got.chunks(), 2, "the second turn's events were reused");
    assert_eq!(got.decode().unwrap(), fresh(&w));
}

#[test]
fn another_execution_or_another_history_is_encoded_anew() {
    let cache = cache(1 << 20);
    past(&cache, &work("i", "e1", history("e1", 10)));
    // Continued as new: another execution of the same instance.
    let next = work("i", "e2", history("e2", 4));
    let got = past(&cache, &next);
    assert_eq!((got.len(), got.chunks()), (4, 1));
    assert_eq!(got.decode().unwrap(), fresh(&next));
    // A history that is not the one encoded (shorter; or other events at the same places).
    let shorter = work("i", "e2", history("e2", 2));
    assert_eq!(past(&cache, &shorter).decode().unwrap(), fresh(&shorter));
    let mut other = history("e2", 6);
    other[1] = scheduled(99);
    let other = work("i", "e2", other);
    let got = past(&cache, &other);
    assert_eq!(got.decode().unwrap(), fresh(&other));
    let mut changed_tail = history("e2", 6);
    changed_tail[5] = scheduled(77);
    let changed_tail = work("i", "e2", changed_tail);
    let got = past(&cache, &changed_tail);
    assert_eq!(got.chunks(), 1);
    assert_eq!(got.decode().unwrap(), fresh(&changed_tail));
    assert_eq!(cache.lock().unwrap().instances(), 1);
}

#[test]
fn past_its_size_the_least_recently_used_instances_go() {
    let one = {
        let probe = cache(1 << 20);
        past(&probe, &work("i0", "e", history("e", 20))).encoded_bytes()
    };
    let cache = cache(one * 8);
    for i in 0..8 {
        past(&cache, &work(&format!("i{i}"), "e", history("e", 20)));
    }
    assert_eq!(cache.lock().unwrap().instances(), 8);
    // i0 used again: the oldest is now i1.
    past(&cache, &work("i0", "e", history("e", 20)));
    past(&cache, &work("i8", "e", history("e", 20)));
    let held = cache.lock().unwrap().bytes();
    assert!(held <= one * 8, "{held} > {}", one * 8);
    assert_eq!(
        cache.lock().unwrap().instances(),
        7,
        "a quarter of nine, at least one, went"
    );
    assert!(cache.lock().unwrap().entries.contains_key(&instance("i0")));
    assert!(!cache.lock().unwrap().entries.contains_key(&instance("i1")));
    assert!(!cache.lock().unwrap().entries.contains_key(&instance("i2")));
    // Forgetting an instance gives its bytes back.
    cache.lock().unwrap().forget(&instance("i0"));
    assert_eq!(cache.lock().unwrap().instances(), 6);
    assert_eq!(cache.lock().unwrap().bytes(), one * 6);
}

#[test]
fn a_cache_of_no_bytes_keeps_nothing_and_still_encodes_every_past() {
    let cache = cache(0);
    let w = work("i", "e", history("e", 5));
    assert_eq!(past(&cache, &w).decode().unwrap(), fresh(&w));
    let c = cache.lock().unwrap();
    assert_eq!((c.instances(), c.bytes()), (0, 0));
}

#[test]
fn a_long_history_keeps_few_chunks() {
    let cache = cache(1 << 24);
    for n in 2..200 {
        let w = work("i", "e", history("e", n));
        let got = past(&cache, &w);
        assert!(got.chunks() <= MAX_CHUNKS, "{} chunks", got.chunks());
        if n % 50 == 0 {
            assert_eq!(got.decode().unwrap(), fresh(&w));
        }
    }
}

#[test]
fn an_entity_call_and_its_answer_in_later_turns_encode_as_a_fresh_conversion_does() {
    use taskhub_core::entity::{
        Caller, EntityId, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT,
    };
    let at = Timestamp::from_millis(1_700_000_000_000);
    let counter = EntityId::new("counter", "k").unwrap();
    let call = EntityRequest::Operation {
        id: "c1".into(),
        op: "add".into(),
        input: Payload::from_json("5").unwrap(),
        caller: Some(Caller {
            instance_id: instance("i"),
            execution_id: ExecutionId::new("e").unwrap(),
        }),
        at: None,
    };
    let sent = HistoryEvent::new(
        at,
        EventKind::EventSent {
            task_id: 1,
            instance_id: counter.instance_id().clone(),
            name: ENTITY_REQUEST_EVENT.into(),
            input: Payload::to_payload(&call, "r").unwrap(),
        },
    );
    let answer = HistoryEvent::new(
        at,
        EventKind::EventRaised {
            name: "c1".into(),
            input: Payload::to_payload(
                &EntityResponse::Ok {
                    output: Payload::from_json("5").unwrap(),
                },
                "r",
            )
            .unwrap(),
        },
    );
    let turns = [
        vec![started("e"), sent.clone()],
        vec![started("e"), sent.clone(), answer.clone()],
        vec![started("e"), sent, answer, scheduled(2)],
    ];
    let cache = cache(1 << 20);
    for (i, history) in turns.into_iter().enumerate() {
        let w = work("i", "e", history);
        let requests = EntityRequests::of(w.past.iter().chain(&w.new));
        let expected: Vec<_> = w
            .past
            .iter()
            .map(|e| event_to_proto_with_entities(e, &w.instance, &requests))
            .collect();
        let got = past_of(&cache, &w, &requests);
        assert_eq!(got.decode().unwrap(), expected, "turn {i}");
        assert_eq!(
            got.chunks(),
            i + 1,
            "turn {i}: the earlier turns' events reused"
        );
    }
    // The answer went out as the entity's, from the cache too.
    let kept = cache.lock().unwrap().entries[&instance("i")]
        .encoded
        .decode()
        .unwrap();
    assert!(matches!(
        kept[2].event_type,
        Some(crate::proto::history_event::EventType::EntityOperationCompleted(_))
    ));
}

#[test]
fn a_rewind_drops_what_was_kept_of_the_history_it_rewrote() {
    let cache = cache(1 << 20);
    let before = work("i", "e1", history("e1", 10));
    past(&cache, &before);
    // Rewound: task 1 dropped, and (a contrived worst case) the event at the old last place
    // is the same as before, so the prefix check alone would take the old bytes.
    let h = history("e1", 10);
    let mut rewritten = vec![h[0].clone(), h[2].clone(), h[2].clone()];
    rewritten.extend(h[3..8].iter().cloned());
    rewritten.push(h[9].clone());
    rewritten.push(h[9].clone());
    let rewound = HistoryEvent::new(
        Timestamp::from_millis(1_700_000_001_000),
        EventKind::ExecutionRewound {
            reason: None,
            rewound_tasks: vec![1],
        },
    );
    let mut after = work("i", "e1", rewritten);
    after.new = vec![rewound];
    assert_eq!(past(&cache, &after).decode().unwrap(), fresh(&after));
}
