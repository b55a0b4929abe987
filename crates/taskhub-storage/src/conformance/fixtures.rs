//! Shared test data and small steps for the conformance cases. Nothing here is a case: cases
//! are the `pub async fn`s of the area modules.

use std::fmt::Debug;
use std::time::Duration;

use taskhub_core::{
    EventKind, ExecutionId, HistoryEvent, InstanceId, OrchestrationStatus, Payload, Timestamp,
};

use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, HistoryWrite, OutboundMessage};
use crate::clock::{Clock, ManualClock};
use crate::error::{StorageError, StorageResult};
use crate::history::HistorySnapshot;
use crate::instances::{InstancePage, InstanceQuery, InstanceRow};
use crate::partitions::PartitionRow;
use crate::queue::{Dequeued, NewQueueMessage, QueueName};
use crate::store::TaskHubStore;

/// Asserts that `result`, of the call `what`, failed with `ReceiptExpired`.
pub(crate) fn assert_expired<T: Debug>(result: &StorageResult<T>, what: &str) {
    assert!(
        matches!(result, Err(StorageError::ReceiptExpired { .. })),
        "{what}: expected ReceiptExpired, got {result:?}"
    );
}

/// Asserts that `result`, of the call `what`, failed with `Conflict`.
pub(crate) fn assert_conflict<T: Debug>(result: &StorageResult<T>, what: &str) {
    assert!(
        matches!(result, Err(StorageError::Conflict { .. })),
        "{what}: expected Conflict, got {result:?}"
    );
}

/// Asserts that `result`, of the call `what`, failed with `InvalidArgument`.
pub(crate) fn assert_invalid<T: Debug>(result: &StorageResult<T>, what: &str) {
    assert!(
        matches!(result, Err(StorageError::InvalidArgument(_))),
        "{what}: expected InvalidArgument, got {result:?}"
    );
}

/// The wall time every conformance store starts at (2023-11-14T22:13:20Z).
pub const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

/// The visibility timeout the cases dequeue with. Whole seconds (Azure Storage counts
/// seconds) and short: on a backend that owns time the cases wait it out for real.
pub(crate) const VISIBILITY: Duration = Duration::from_secs(4);

/// A bit longer than [`VISIBILITY`]: advancing by this expires a dequeue.
pub(crate) const PAST_VISIBILITY: Duration = Duration::from_secs(5);

/// The delay the cases enqueue and abandon with: whole seconds, under [`LONG_VISIBILITY`].
pub(crate) const DELAY: Duration = Duration::from_secs(3);

/// A visibility timeout no case waits out (to tell an abandon delay from an expiry).
pub(crate) const LONG_VISIBILITY: Duration = Duration::from_secs(120);

/// Moves the test's time on by `by`: advances the manual clock, or, on a backend that owns
/// time ([`TaskHubStore::owns_time`]), waits `by` for real.
pub(crate) async fn advance(store: &dyn TaskHubStore, clock: &ManualClock, by: Duration) {
    if store.owns_time() {
        #[expect(
            clippy::disallowed_methods,
            reason = "a backend that owns time (Azure) ignores the manual clock: wait for real"
        )]
        tokio::time::sleep(by).await;
    } else {
        clock.advance(by);
    }
}

/// How long to advance to check that something hidden for `d` is still hidden: one second
/// short of `d` on the manual clock; on a backend that owns time, well short of it (half,
/// or `d` less two seconds), so that the calls' own latency cannot reach `d`.
pub(crate) fn just_before(store: &dyn TaskHubStore, d: Duration) -> Duration {
    if store.owns_time() {
        (d / 2)
            .min(d.saturating_sub(Duration::from_secs(2)))
            .max(Duration::from_millis(200))
    } else {
        d.saturating_sub(Duration::from_secs(1))
    }
}

/// Passes `delay` in two steps: just before it, the message of `queue` given back or sent
/// with that delay (`what`) MUST still be hidden; then to a second past it.
pub(crate) async fn pass_delay_hidden(
    store: &dyn TaskHubStore,
    clock: &ManualClock,
    queue: QueueName,
    delay: Duration,
    what: &str,
) {
    let early = just_before(store, delay);
    advance(store, clock, early).await;
    assert!(
        visible_bodies(store, queue).await.is_empty(),
        "{what} with a {delay:?} delay: hidden after {early:?}"
    );
    advance(store, clock, delay + Duration::from_secs(1) - early).await;
}

/// The test's notion of now: the manual clock; on a backend that owns time, the store's own
/// clock when it can tell it ([`server_now`](crate::QueueStore::server_now): a database
/// server's), else the wall clock (Azure Storage stamps rows with the real time).
pub(crate) async fn now(store: &dyn TaskHubStore, clock: &ManualClock) -> Timestamp {
    if !store.owns_time() {
        return clock.now();
    }
    if let Some(now) = store
        .server_now()
        .await
        .expect("the store tells the time on its clock")
    {
        return now;
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "a backend that owns time and cannot tell it (Azure) stamps rows with the real time"
    )]
    let now = std::time::SystemTime::now();
    Timestamp::from_system_time(now)
}

/// Asserts a time the store reported: exactly `expected` on the manual clock; within the
/// window `[expected - 1 s, expected + 2 s]` on a backend that owns time (it keeps whole
/// seconds by its own clock, and the call took a moment).
pub(crate) fn assert_store_time(
    store: &dyn TaskHubStore,
    got: Option<Timestamp>,
    expected: Timestamp,
    what: &str,
) {
    if store.owns_time() {
        let got = got.unwrap_or_else(|| panic!("{what}: no time reported"));
        let (lo, hi) = (
            expected.as_millis().saturating_sub(1_000),
            expected.as_millis() + 2_000,
        );
        assert!(
            (lo..=hi).contains(&got.as_millis()),
            "{what}: {got} is not within [-1 s, +2 s] of {expected}"
        );
    } else {
        assert_eq!(got, Some(expected), "{what}");
    }
}

pub(crate) fn iid(id: &str) -> InstanceId {
    InstanceId::new(id).expect("the conformance suite uses valid instance IDs")
}

pub(crate) fn eid(id: &str) -> ExecutionId {
    ExecutionId::new(id).expect("the conformance suite uses valid execution IDs")
}

pub(crate) fn json(text: &str) -> Payload {
    Payload::from_json(text).expect("the conformance suite uses valid JSON")
}

pub(crate) fn at(offset_ms: u64) -> Timestamp {
    Timestamp::from_millis(START.as_millis() + offset_ms)
}

pub(crate) fn msg(body: &str) -> NewQueueMessage {
    NewQueueMessage {
        body: body.to_owned(),
        delay: Duration::ZERO,
    }
}

pub(crate) fn delayed(body: &str, delay: Duration) -> NewQueueMessage {
    NewQueueMessage {
        body: body.to_owned(),
        delay,
    }
}

pub(crate) fn outbound(queue: QueueName, body: &str) -> OutboundMessage {
    OutboundMessage {
        claim: None,
        queue,
        message: msg(body),
    }
}

pub(crate) async fn enqueue(store: &dyn TaskHubStore, queue: QueueName, bodies: &[&str]) {
    store
        .enqueue(queue, bodies.iter().map(|b| msg(b)).collect())
        .await
        .expect("enqueue");
}

pub(crate) async fn dequeue(
    store: &dyn TaskHubStore,
    queue: QueueName,
    max: usize,
) -> Vec<Dequeued> {
    store
        .dequeue(queue, max, VISIBILITY)
        .await
        .expect("dequeue")
}

/// Dequeues everything visible (up to 32) and returns the bodies.
pub(crate) async fn visible_bodies(store: &dyn TaskHubStore, queue: QueueName) -> Vec<String> {
    dequeue(store, queue, 32)
        .await
        .into_iter()
        .map(|d| d.body)
        .collect()
}

pub(crate) async fn queue_length(store: &dyn TaskHubStore, queue: QueueName) -> u64 {
    store.stats(queue).await.expect("stats").length
}

pub(crate) fn event(offset_ms: u64, event: EventKind) -> HistoryEvent {
    HistoryEvent::new(at(offset_ms), event)
}

pub(crate) fn started(execution: &str) -> HistoryEvent {
    event(
        0,
        EventKind::ExecutionStarted {
            name: "Conformance".to_owned(),
            version: None,
            input: json("{\"n\":1}"),
            execution_id: eid(execution),
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
    )
}

pub(crate) fn raised(offset_ms: u64, name: &str) -> HistoryEvent {
    event(
        offset_ms,
        EventKind::EventRaised {
            name: name.to_owned(),
            input: json("null"),
        },
    )
}

/// A checkpoint that writes nothing but the given history.
pub(crate) fn history_request(
    instance: &str,
    execution: &str,
    expected: Option<&HistorySnapshot>,
    new_execution: bool,
    events: Vec<HistoryEvent>,
) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: iid(instance),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: eid(execution),
            expected: expected.map(|s| s.etag.clone()),
            new_execution,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// Starts an instance's history: `ExecutionStarted` then `events`.
pub(crate) async fn start_history(
    store: &dyn TaskHubStore,
    instance: &str,
    execution: &str,
    mut events: Vec<HistoryEvent>,
) -> HistorySnapshot {
    events.insert(0, started(execution));
    commit(
        store,
        history_request(instance, execution, None, true, events),
    )
    .await;
    load(store, instance).await
}

pub(crate) async fn commit(
    store: &dyn TaskHubStore,
    request: CheckpointRequest,
) -> CheckpointOutcome {
    store.checkpoint(request).await.expect("checkpoint")
}

/// The instance row of `id`, if any.
pub(crate) async fn instance(store: &dyn TaskHubStore, id: &str) -> Option<InstanceRow> {
    store.get_instance(&iid(id)).await.expect("get_instance")
}

pub(crate) async fn load(store: &dyn TaskHubStore, instance: &str) -> HistorySnapshot {
    store
        .load_history(&iid(instance))
        .await
        .expect("load_history")
        .unwrap_or_else(|| panic!("instance '{instance}' should have history"))
}

pub(crate) fn row(
    id: &str,
    name: &str,
    status: OrchestrationStatus,
    created_at: Timestamp,
) -> InstanceRow {
    InstanceRow {
        status,
        input: json("null"),
        ..InstanceRow::new(iid(id), name, eid("exec-1"), created_at)
    }
}

/// `row` without its ETag, to compare what was written with what was read.
pub(crate) fn without_etag(row: &InstanceRow) -> InstanceRow {
    InstanceRow {
        etag: None,
        ..row.clone()
    }
}

pub(crate) async fn list_page(store: &dyn TaskHubStore, query: &InstanceQuery) -> InstancePage {
    store.list_instances(query).await.expect("list_instances")
}

/// Follows continuation tokens to the end; returns the IDs in the order listed.
pub(crate) async fn list_all(store: &dyn TaskHubStore, query: InstanceQuery) -> Vec<String> {
    let mut query = query;
    let mut ids = Vec::new();
    for _ in 0..1_000 {
        let page = list_page(store, &query).await;
        if query.page_size > 0 {
            assert!(
                page.instances.len() <= query.page_size,
                "a page of size {} returned {} rows",
                query.page_size,
                page.instances.len()
            );
        }
        ids.extend(page.instances.iter().map(|r| r.instance_id.to_string()));
        match page.continuation {
            Some(token) => query.continuation = Some(token),
            None => return ids,
        }
    }
    panic!("list_instances still returned a continuation token after 1,000 pages: {ids:?}");
}

/// Creates a hub of `partition_count` and takes the lease of `partition` once; returns the
/// epoch the lease was taken under.
pub(crate) async fn hub_with_lease(
    store: &dyn TaskHubStore,
    partition_count: u32,
    partition: u32,
    owner: &str,
) -> u64 {
    store
        .create_hub(partition_count, START)
        .await
        .expect("create_hub");
    take_lease(store, partition, owner).await
}

/// Takes the lease of `partition` for `owner` (bumping the epoch); returns the new epoch.
pub(crate) async fn take_lease(store: &dyn TaskHubStore, partition: u32, owner: &str) -> u64 {
    let current = partition_row(store, partition).await;
    let next = PartitionRow {
        owner: Some(owner.to_owned()),
        epoch: current.epoch + 1,
        ..current.clone()
    };
    store
        .put_partition(&next, current.etag.as_ref())
        .await
        .expect("put_partition");
    next.epoch
}

pub(crate) async fn partition_row(store: &dyn TaskHubStore, partition: u32) -> PartitionRow {
    store
        .list_partitions()
        .await
        .expect("list_partitions")
        .into_iter()
        .find(|r| r.partition == partition)
        .unwrap_or_else(|| panic!("partition {partition} should exist"))
}
