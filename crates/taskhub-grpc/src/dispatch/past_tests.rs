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

fn past(cache: &mut PastCache, w: &OrchestrationWork) -> EncodedEvents {
    cache.past_of(w, &EntityRequests::default())
}

#[test]
fn a_later_turn_encodes_only_the_events_new_to_it() {
    let mut cache = PastCache::new(1 << 20);
    let first = work("i", "e1", history("e1", 10));
    let a = past(&mut cache, &first);
    assert_eq!((a.len(), a.chunks()), (10, 1));
    assert_eq!(a.decode().unwrap(), fresh(&first));
    let second = work("i", "e1", history("e1", 25));
    let b = past(&mut cache, &second);
    // The first ten shared as they were, the fifteen new in a chunk of their own.
    assert_eq!((b.len(), b.chunks()), (25, 2));
    assert_eq!(b.decode().unwrap(), fresh(&second));
    // The same past again: nothing to add.
    let c = past(&mut cache, &second);
    assert_eq!(c, b);
    assert_eq!(cache.bytes(), b.encoded_bytes());
}

#[test]
fn a_first_turn_with_no_past_is_followed_by_cached_ones() {
    let mut cache = PastCache::new(1 << 20);
    assert!(past(&mut cache, &work("i", "e1", Vec::new())).is_empty());
    let w = work("i", "e1", history("e1", 3));
    assert_eq!(past(&mut cache, &w).decode().unwrap(), fresh(&w));
    let w = work("i", "e1", history("e1", 5));
    let got = past(&mut cache, &w);
    assert_eq!(got.chunks(), 2, "the second turn's events were reused");
    assert_eq!(got.decode().unwrap(), fresh(&w));
}

#[test]
fn another_execution_or_another_history_is_encoded_anew() {
    let mut cache = PastCache::new(1 << 20);
    past(&mut cache, &work("i", "e1", history("e1", 10)));
    // Continued as new: another execution of the same instance.
    let next = work("i", "e2", history("e2", 4));
    let got = past(&mut cache, &next);
    assert_eq!((got.len(), got.chunks()), (4, 1));
    assert_eq!(got.decode().unwrap(), fresh(&next));
    // A history that is not the one encoded (shorter; or other events at the same places).
    let shorter = work("i", "e2", history("e2", 2));
    assert_eq!(
        past(&mut cache, &shorter).decode().unwrap(),
        fresh(&shorter)
    );
    let mut other = history("e2", 6);
    other[1] = scheduled(99);
    let other = work("i", "e2", other);
    let got = past(&mut cache, &other);
    assert_eq!(got.decode().unwrap(), fresh(&other));
    let mut changed_tail = history("e2", 6);
    changed_tail[5] = scheduled(77);
    let changed_tail = work("i", "e2", changed_tail);
    let got = past(&mut cache, &changed_tail);
    assert_eq!(got.chunks(), 1);
    assert_eq!(got.decode().unwrap(), fresh(&changed_tail));
    assert_eq!(cache.instances(), 1);
}

#[test]
fn past_its_size_the_least_recently_used_instances_go() {
    let one = {
        let mut probe = PastCache::new(1 << 20);
        past(&mut probe, &work("i0", "e", history("e", 20))).encoded_bytes()
    };
    let mut cache = PastCache::new(one * 8);
    for i in 0..8 {
        past(&mut cache, &work(&format!("i{i}"), "e", history("e", 20)));
    }
    assert_eq!(cache.instances(), 8);
    // i0 used again: the oldest is now i1.
    past(&mut cache, &work("i0", "e", history("e", 20)));
    past(&mut cache, &work("i8", "e", history("e", 20)));
    assert!(cache.bytes() <= one * 8, "{} > {}", cache.bytes(), one * 8);
    assert_eq!(
        cache.instances(),
        7,
        "a quarter of nine, at least one, went"
    );
    assert!(cache.entries.contains_key(&instance("i0")));
    assert!(!cache.entries.contains_key(&instance("i1")));
    assert!(!cache.entries.contains_key(&instance("i2")));
    // Forgetting an instance gives its bytes back.
    cache.forget(&instance("i0"));
    assert_eq!(cache.instances(), 6);
    assert_eq!(cache.bytes(), one * 6);
}

#[test]
fn a_cache_of_no_bytes_keeps_nothing_and_still_encodes_every_past() {
    let mut cache = PastCache::new(0);
    let w = work("i", "e", history("e", 5));
    assert_eq!(past(&mut cache, &w).decode().unwrap(), fresh(&w));
    assert_eq!((cache.instances(), cache.bytes()), (0, 0));
}

#[test]
fn a_long_history_keeps_few_chunks() {
    let mut cache = PastCache::new(1 << 24);
    for n in 2..200 {
        let w = work("i", "e", history("e", n));
        let got = past(&mut cache, &w);
        assert!(got.chunks() <= MAX_CHUNKS, "{} chunks", got.chunks());
        if n % 50 == 0 {
            assert_eq!(got.decode().unwrap(), fresh(&w));
        }
    }
}
