#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use super::*;
use crate::proto::ActivityRequest;

/// A worker's stream as the tests read it; dropping it closes its queue (the stream is gone).
struct Rx(Arc<StreamQueue>);

impl Rx {
    fn new() -> (WorkerTx, Self) {
        let q = Arc::new(StreamQueue::default());
        (Arc::clone(&q), Self(q))
    }

    /// The next unread item: `Err` if there is none or the stream ended.
    fn try_recv(&mut self) -> Result<Result<OutgoingWorkItem, Status>, ()> {
        let bounds = Bounds {
            items: usize::MAX,
            bytes: usize::MAX,
        };
        let mut cx = std::task::Context::from_waker(futures_util::task::noop_waker_ref());
        match self.0.poll_read(&mut cx, bounds, T0) {
            std::task::Poll::Ready(r) => r.next.ok_or(()),
            std::task::Poll::Pending => Err(()),
        }
    }
}

impl Drop for Rx {
    fn drop(&mut self) {
        self.0.close(None);
    }
}

const T0: Duration = Duration::from_secs(1);

fn activity(name: &str) -> work_item::Request {
    work_item::Request::ActivityRequest(ActivityRequest {
        name: name.into(),
        ..ActivityRequest::default()
    })
}

fn worker(state: &mut State, capacity: [usize; 2]) -> (u64, Rx) {
    let (tx, rx) = Rx::new();
    (state.connect(tx, capacity, T0).unwrap(), rx)
}

fn submit(state: &mut State, name: &str) -> (u64, oneshot::Receiver<Reply>) {
    let (tx, rx) = oneshot::channel();
    (
        state
            .submit(Kind::Activity, activity(name), tx, T0)
            .unwrap(),
        rx,
    )
}

/// The (activity name, token) of each item in the stream so far.
fn received(rx: &mut Rx) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Ok(item) = rx.try_recv() {
        let item = item.unwrap().item;
        if let Some(work_item::Request::ActivityRequest(a)) = item.request {
            out.push((a.name, item.completion_token));
        }
    }
    out
}

fn names(items: &[(String, String)]) -> Vec<&str> {
    items.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn a_worker_never_holds_more_than_it_asked_for() {
    let mut s = State::new(T0);
    let (w, mut rx) = worker(&mut s, [1, 2]);
    let _items: Vec<_> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| submit(&mut s, n))
        .collect();
    let got = received(&mut rx);
    assert_eq!(names(&got), ["a", "b"]);
    assert_eq!(s.held(w), [0, 2]);
    // A completion makes room for exactly one more, the oldest waiting.
    s.complete(&got[0].1, Kind::Activity, T0).unwrap();
    assert_eq!(names(&received(&mut rx)), ["c"]);
    assert_eq!(s.held(w), [0, 2]);
    // Four were open at once; three are now.
    assert_eq!(s.peak(), [0, 4]);
    assert_eq!(s.open, [0, 3, 0]);
}

#[test]
fn tokens_are_unique_and_refused_after_completion_or_for_the_other_kind() {
    let mut s = State::new(T0);
    let (_w, mut rx) = worker(&mut s, [5, 5]);
    let (_a, _ra) = submit(&mut s, "a");
    let (_b, _rb) = submit(&mut s, "b");
    let got = received(&mut rx);
    assert_ne!(got[0].1, got[1].1);
    assert_eq!(
        s.complete(&got[0].1, Kind::Orchestration, T0).unwrap_err(),
        TokenError::WrongKind(Kind::Activity)
    );
    s.complete(&got[0].1, Kind::Activity, T0).unwrap();
    assert_eq!(
        s.complete(&got[0].1, Kind::Activity, T0).unwrap_err(),
        TokenError::Unknown
    );
    assert_eq!(
        s.abandon("nope", Kind::Activity, T0).unwrap_err(),
        TokenError::Unknown
    );
    // Another dispatcher's tokens never match this one's.
    let other = State::new(T0);
    assert_ne!(other.token_prefix, s.token_prefix);
}

#[test]
fn a_disconnected_workers_items_go_to_another_worker_at_once_oldest_first() {
    let mut s = State::new(T0);
    let (w1, mut rx1) = worker(&mut s, [5, 2]);
    let (_a, _ra) = submit(&mut s, "a");
    let (_b, _rb) = submit(&mut s, "b");
    let first = received(&mut rx1);
    assert_eq!(names(&first), ["a", "b"]);
    let (w2, mut rx2) = worker(&mut s, [5, 5]);
    assert!(received(&mut rx2).is_empty());
    s.disconnect(w1, T0);
    let second = received(&mut rx2);
    assert_eq!(names(&second), ["a", "b"]);
    assert_eq!(s.held(w2), [0, 2]);
    // The old tokens are refused, naming the closed stream; the new ones work.
    assert_eq!(
        s.complete(&first[0].1, Kind::Activity, T0).unwrap_err(),
        TokenError::StreamClosed(w1)
    );
    s.complete(&second[0].1, Kind::Activity, T0).unwrap();
}

#[test]
fn an_abandoned_item_goes_to_another_worker_with_room_else_back_to_the_same() {
    let mut s = State::new(T0);
    let (w1, mut rx1) = worker(&mut s, [5, 5]);
    let (_a, _ra) = submit(&mut s, "a");
    let got = received(&mut rx1);
    let (w2, mut rx2) = worker(&mut s, [5, 5]);
    s.abandon(&got[0].1, Kind::Activity, T0).unwrap();
    let again = received(&mut rx2);
    assert_eq!(names(&again), ["a"]);
    assert_eq!((s.held(w1), s.held(w2)), ([0, 0], [0, 1]));
    // Alone, the abandoning worker gets it back (under a new token).
    s.disconnect(w1, T0);
    s.abandon(&again[0].1, Kind::Activity, T0).unwrap();
    let third = received(&mut rx2);
    assert_eq!(names(&third), ["a"]);
    assert_ne!(third[0].1, again[0].1);
}

#[test]
fn a_withdrawn_item_is_not_handed_out_and_its_token_is_refused() {
    let mut s = State::new(T0);
    let (a, _ra) = submit(&mut s, "a");
    s.withdraw(a, T0);
    let (_w, mut rx) = worker(&mut s, [5, 5]);
    assert!(received(&mut rx).is_empty());
    let (b, _rb) = submit(&mut s, "b");
    let got = received(&mut rx);
    s.withdraw(b, T0);
    assert_eq!(s.standing(b), Standing::Gone);
    assert_eq!(
        s.complete(&got[0].1, Kind::Activity, T0).unwrap_err(),
        TokenError::Unknown
    );
}

#[test]
fn standing_tells_queued_with_no_worker_from_held() {
    let mut s = State::new(Duration::ZERO);
    let (a, _ra) = submit(&mut s, "a");
    assert_eq!(
        s.standing(a),
        Standing::Queued {
            idle_since: Some(T0),
            given_back: false,
        }
    );
    let (tx, mut rx) = Rx::new();
    let later = T0 * 3;
    let w = s.connect(tx, [1, 1], later).unwrap();
    assert_eq!(s.standing(a), Standing::Held { since: later });
    assert_eq!(names(&received(&mut rx)), ["a"]);
    s.disconnect(w, later * 2);
    assert_eq!(
        s.standing(a),
        Standing::Queued {
            idle_since: Some(later * 2),
            given_back: true,
        }
    );
}

#[test]
fn a_worker_whose_stream_is_gone_is_dropped_and_its_item_goes_elsewhere() {
    let mut s = State::new(T0);
    let (_w1, rx1) = worker(&mut s, [5, 5]);
    drop(rx1);
    let (_w2, mut rx2) = worker(&mut s, [5, 5]);
    let (_a, _ra) = submit(&mut s, "a");
    let (_b, _rb) = submit(&mut s, "b");
    assert_eq!(names(&received(&mut rx2)), ["a", "b"]);
}

#[test]
fn close_ends_streams_and_waiting_calls() {
    let mut s = State::new(T0);
    let (_w, mut rx) = worker(&mut s, [5, 5]);
    let (_a, mut ra) = submit(&mut s, "a");
    s.close();
    assert!(ra.try_recv().is_err());
    let _ = received(&mut rx);
    assert!(rx.try_recv().is_err(), "the stream ended");
    let (tx, _rx) = oneshot::channel();
    assert_eq!(
        s.submit(Kind::Activity, activity("b"), tx, T0),
        Err(Refused::Closed)
    );
}

#[test]
fn an_item_given_back_too_often_is_given_up() {
    let mut s = State::new(T0);
    s.set_give_back_limit(3);
    let (w1, mut rx1) = worker(&mut s, [5, 5]);
    let (_a, mut ra) = submit(&mut s, "a");
    // Abandoned twice: back each time.
    for _ in 0..2 {
        let got = received(&mut rx1);
        assert_eq!(names(&got), ["a"]);
        s.abandon(&got[0].1, Kind::Activity, T0).unwrap();
    }
    // Its worker goes away with it: the third give-back, the limit.
    assert_eq!(names(&received(&mut rx1)), ["a"]);
    s.disconnect(w1, T0);
    match ra.try_recv().unwrap() {
        Reply::GivenUp(why) => assert!(why.contains("given back 3 times"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.open, [0, 0, 0]);
    let (_w2, mut rx2) = worker(&mut s, [5, 5]);
    assert!(received(&mut rx2).is_empty());
}

fn entity_item() -> work_item::Request {
    work_item::Request::EntityRequest(crate::proto::EntityBatchRequest {
        instance_id: "@counter@k".into(),
        ..crate::proto::EntityBatchRequest::default()
    })
}

#[test]
fn entity_batches_have_their_own_capacity_and_tokens() {
    let mut s = State::new(T0);
    let (tx, mut rx) = Rx::new();
    let w = s
        .connect_all(tx, [1, 1, 2], StreamInfo::default(), T0)
        .unwrap();
    let mut replies = Vec::new();
    for _ in 0..3 {
        let (tx, reply) = oneshot::channel();
        s.submit(Kind::Entity, entity_item(), tx, T0).unwrap();
        replies.push(reply);
    }
    // Two handed out (its entity capacity), the third waits; activities are not held back.
    let mut tokens = Vec::new();
    while let Ok(item) = rx.try_recv() {
        let item = item.unwrap().item;
        assert!(matches!(
            item.request,
            Some(work_item::Request::EntityRequest(_))
        ));
        tokens.push(item.completion_token);
    }
    assert_eq!(tokens.len(), 2);
    assert_eq!(s.held_entities(w), 2);
    assert_eq!(s.held(w), [0, 0]);
    // An entity token is no activity's.
    assert_eq!(
        s.complete(&tokens[0], Kind::Activity, T0).unwrap_err(),
        TokenError::WrongKind(Kind::Entity)
    );
    // Abandoned: it goes back to the front and, the worker having room again, out at once.
    s.abandon(&tokens[0], Kind::Entity, T0).unwrap();
    let again: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(again.len(), 1);
    assert_eq!(s.held_entities(w), 2);
    // A completion makes room for the third.
    s.complete(&tokens[1], Kind::Entity, T0).unwrap();
    assert_eq!(std::iter::from_fn(|| rx.try_recv().ok()).count(), 1);
    assert_eq!(s.open, [0, 0, 2]);
}

#[test]
fn a_request_is_built_once_and_again_only_after_a_give_back() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let mut s = State::new(T0);
    let rebuilt = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&rebuilt);
    let rebuild: Rebuild = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        activity("a").into()
    });
    // A worker whose stream is gone: the hand-out fails, and the request stays for the next.
    let (gone, gone_rx) = worker(&mut s, [5, 5]);
    drop(gone_rx);
    let (tx, _ra) = oneshot::channel();
    s.submit_once(Kind::Activity, activity("a").into(), rebuild, tx, T0)
        .unwrap();
    assert_eq!(
        s.connected(),
        1,
        "dropped when its stream's drop disconnects it"
    );
    assert_eq!(rebuilt.load(Ordering::SeqCst), 0);
    // The first hand-out that reaches a worker moves the request built by the call.
    let (w1, mut rx1) = worker(&mut s, [5, 5]);
    assert_ne!(w1, gone);
    let first = received(&mut rx1);
    assert_eq!(names(&first), ["a"]);
    assert_eq!(rebuilt.load(Ordering::SeqCst), 0);
    // Given back: the next hand-out builds it again, the same request.
    let (_w2, mut rx2) = worker(&mut s, [5, 5]);
    s.abandon(&first[0].1, Kind::Activity, T0).unwrap();
    assert_eq!(names(&received(&mut rx2)), ["a"]);
    assert_eq!(rebuilt.load(Ordering::SeqCst), 1);
}

#[test]
fn an_item_taken_back_unread_is_never_queued_twice_on_one_stream() {
    let mut s = State::new(T0);
    let (w, mut rx) = worker(&mut s, [5, 5]);
    // Out at the worker, unread; then it times out (its call withdraws it) and the runtime
    // tries again with a new item, which goes to the same worker.
    let (a, _ra) = submit(&mut s, "a");
    s.withdraw(a, T0 * 2);
    let (_again, _rb) = submit(&mut s, "a");
    assert_eq!(s.unread(), [(w, 1)], "one copy on the stream, not two");
    assert_eq!(names(&received(&mut rx)), ["a"]);
}

#[test]
fn a_full_stream_queue_gets_nothing_more_until_its_stream_reads() {
    let mut s = State::new(T0);
    s.set_stream_bounds(Bounds {
        items: 2,
        bytes: usize::MAX,
    });
    let (w, rx) = worker(&mut s, [10, 10]);
    let _items: Vec<_> = ["a", "b", "c"].iter().map(|n| submit(&mut s, n)).collect();
    assert_eq!(s.unread(), [(w, 2)]);
    assert_eq!(
        s.held(w),
        [0, 2],
        "c waits although the worker declared room for 10"
    );
    // The stream reads one from the full queue: the dispatcher is told, and c goes out.
    let mut cx = std::task::Context::from_waker(futures_util::task::noop_waker_ref());
    let bounds = Bounds {
        items: 2,
        bytes: usize::MAX,
    };
    let std::task::Poll::Ready(read) = rx.0.poll_read(&mut cx, bounds, T0) else {
        panic!("an item is queued")
    };
    assert!(read.made_room);
    s.made_room(T0);
    assert_eq!(s.held(w), [0, 3]);
    assert_eq!(s.unread(), [(w, 2)]);
}

#[test]
fn a_stalled_stream_is_closed_and_its_items_go_to_another_worker_at_once() {
    let mut s = State::new(T0);
    let timeout = Duration::from_secs(60);
    let (stalled, _never_read) = worker(&mut s, [5, 5]);
    let (_a, _ra) = submit(&mut s, "a");
    let (_b, _rb) = submit(&mut s, "b");
    let (reader, mut rx) = worker(&mut s, [5, 5]);
    assert_eq!(s.unread(), [(stalled, 2), (reader, 0)]);
    // The stalled stream's tokens, as a late answer would send them.
    let old_tokens: Vec<String> = s.tokens.keys().cloned().collect();
    assert!(!s.close_if_stalled(stalled, timeout, T0 + timeout - Duration::from_millis(1)));
    assert!(s.close_if_stalled(stalled, timeout, T0 + timeout));
    assert_eq!(s.connected(), 1);
    let got = received(&mut rx);
    assert_eq!(
        names(&got),
        ["a", "b"],
        "taken over by the reading worker at once"
    );
    // A late answer under the closed stream's token is refused, naming the stream; the
    // taker's answer completes the item, once.
    for t in &old_tokens {
        assert_eq!(
            s.complete(t, Kind::Activity, T0).unwrap_err(),
            TokenError::StreamClosed(stalled)
        );
    }
    s.complete(&got[0].1, Kind::Activity, T0).unwrap();
    assert_eq!(
        s.complete(&got[0].1, Kind::Activity, T0).unwrap_err(),
        TokenError::Unknown
    );
}

#[test]
fn a_token_names_its_stream_and_a_forged_one_is_unknown() {
    let mut s = State::new(T0);
    let (w, mut rx) = worker(&mut s, [5, 5]);
    let (_a, _ra) = submit(&mut s, "a");
    let got = received(&mut rx);
    assert_eq!(s.stream_of(&got[0].1), Some(w));
    assert_eq!(s.stream_of("someone-else-1-2"), None);
    let forged = format!("{}-{w}-999", s.token_prefix);
    assert_eq!(
        s.complete(&forged, Kind::Activity, T0).unwrap_err(),
        TokenError::Unknown,
        "the stream is open: an unknown token is just unknown"
    );
    let other_stream = format!("{}-77-0", s.token_prefix);
    assert_eq!(
        s.complete(&other_stream, Kind::Activity, T0).unwrap_err(),
        TokenError::StreamClosed(77)
    );
}

/// An activity request of about `kib` KiB (its input).
fn large_activity(name: &str, kib: usize) -> work_item::Request {
    work_item::Request::ActivityRequest(ActivityRequest {
        name: name.into(),
        input: Some("x".repeat(kib * 1024)),
        ..ActivityRequest::default()
    })
}

#[test]
fn items_waiting_for_a_worker_hold_no_more_than_the_waiting_limit() {
    let mut s = State::new(T0);
    s.set_waiting_limit(100 * 1024);
    let mut replies = Vec::new();
    let mut submit_large = |s: &mut State, name: &str| {
        let (tx, rx) = oneshot::channel();
        let r = s.submit(Kind::Activity, large_activity(name, 40), tx, T0);
        replies.push(rx);
        r
    };
    // No worker: two of 40 KiB wait; a third would be over 100 KiB and is refused.
    submit_large(&mut s, "a").unwrap();
    submit_large(&mut s, "b").unwrap();
    let waiting = s.waiting_bytes();
    assert!(waiting > 80 * 1024 && waiting < 100 * 1024, "{waiting}");
    assert_eq!(
        submit_large(&mut s, "c"),
        Err(Refused::Backlog {
            waiting,
            limit: 100 * 1024
        })
    );
    // A worker takes one: its bytes no longer wait, and there is room again.
    let (w, mut rx) = worker(&mut s, [1, 1]);
    assert_eq!(names(&received(&mut rx)), ["a"]);
    assert!(s.waiting_bytes() < 50 * 1024);
    submit_large(&mut s, "c").unwrap();
    // The worker goes away: what it held waits again, counted again.
    s.disconnect(w, T0);
    drop(rx);
    assert!(s.waiting_bytes() > 100 * 1024, "{}", s.waiting_bytes());
    assert!(submit_large(&mut s, "d").is_err());
}

#[test]
fn one_item_of_any_size_waits_when_none_does() {
    let mut s = State::new(T0);
    s.set_waiting_limit(1024);
    let (tx, _rx) = oneshot::channel();
    let id = s
        .submit(Kind::Activity, large_activity("big", 64), tx, T0)
        .unwrap();
    let (tx2, _rx2) = oneshot::channel();
    assert!(s
        .submit(Kind::Activity, activity("small"), tx2, T0)
        .is_err());
    // Withdrawn: nothing waits any more.
    s.withdraw(id, T0);
    assert_eq!(s.waiting_bytes(), 0);
    let (tx3, _rx3) = oneshot::channel();
    assert!(s.submit(Kind::Activity, activity("small"), tx3, T0).is_ok());
}
