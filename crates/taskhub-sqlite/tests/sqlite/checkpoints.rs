//! Checkpoints on SQLite: one transaction with fence and ETag checks.

use std::time::Duration;

use crate::common::{
    clock, event, fenced_first_checkpoint, first_checkpoint, iid, msg, open, row, TestDir,
};
use taskhub_core::{ExecutionId, OrchestrationStatus, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, Expect, HistoryStore, HistoryWrite, InstanceStore,
    LeaseFence, OutboundMessage, PartitionStore, QueueName, QueueStore, StorageError,
};

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_checkpoint_commits_everything_together() {
    let dir = TestDir::new();
    let store = open(&dir.file("c.db"), &clock());
    store.create_hub(4, Timestamp::EPOCH).await.unwrap();
    store
        .enqueue(QueueName::Control(1), vec![msg("start"), msg("other")])
        .await
        .unwrap();
    let held = store
        .dequeue(QueueName::Control(1), 1, MINUTE)
        .await
        .unwrap()
        .remove(0);
    let mut req = fenced_first_checkpoint("i1", 1, "activity");
    req.consumed = vec![(QueueName::Control(1), held.receipt.clone())];
    let out = store.checkpoint(req).await.unwrap();
    let snap = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(Some(snap.etag.clone()), out.history_etag);
    assert_eq!(snap.events, vec![event(1)]);
    assert!(snap.pending_outbox.is_empty());
    let inst = store.get_instance(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(inst.etag, out.instance_etag);
    assert_eq!(
        store
            .dequeue(QueueName::WorkItems, 1, MINUTE)
            .await
            .unwrap()[0]
            .body,
        "activity"
    );
    assert_eq!(store.stats(QueueName::Control(1)).await.unwrap().length, 1);

    // Append; a stale consumed receipt is ignored.
    let append = CheckpointRequest {
        instance_id: iid("i1"),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: Some(snap.etag.clone()),
            new_execution: false,
            events: vec![event(2), event(3)],
        }),
        instance: Some((
            row("i1", "Orch", OrchestrationStatus::Completed, 1),
            Expect::ETag(inst.etag.clone().unwrap()),
        )),
        outbound: Vec::new(),
        consumed: vec![(QueueName::Control(1), held.receipt)],
    };
    let out2 = store.checkpoint(append.clone()).await.unwrap();
    assert_ne!(out2.history_etag, out.history_etag);
    let snap2 = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(snap2.events, vec![event(1), event(2), event(3)]);
    // The same checkpoint again (made from the same loaded history) conflicts.
    let err = store.checkpoint(append).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err}");

    // A new execution replaces the events.
    let restart = CheckpointRequest {
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e2").unwrap(),
            expected: Some(snap2.etag),
            new_execution: true,
            events: vec![event(9)],
        }),
        instance: None,
        ..first_checkpoint("i1")
    };
    store.checkpoint(restart).await.unwrap();
    let snap3 = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(snap3.execution_id.as_str(), "e2");
    assert_eq!(snap3.events, vec![event(9)]);
}

#[tokio::test]
async fn a_fenced_or_conflicting_checkpoint_changes_nothing() {
    let dir = TestDir::new();
    let store = open(&dir.file("c.db"), &clock());
    store.create_hub(2, Timestamp::EPOCH).await.unwrap();
    let mut p0 = store.list_partitions().await.unwrap().remove(0);
    let old_etag = p0.etag.clone();
    p0.epoch = 1;
    p0.owner = Some("w2".into());
    store.put_partition(&p0, old_etag.as_ref()).await.unwrap();

    let mut req = fenced_first_checkpoint("i1", 0, "x");
    let err = store.checkpoint(req.clone()).await.unwrap_err();
    assert_eq!(
        err,
        StorageError::Fenced {
            partition: 0,
            attempted: 0,
            current: 1
        }
    );
    assert!(store.load_history(&iid("i1")).await.unwrap().is_none());
    assert!(store.get_instance(&iid("i1")).await.unwrap().is_none());
    assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 0);

    // A row that already exists makes `Expect::Absent` fail: the history write before it in
    // the same checkpoint is rolled back too.
    store
        .put_instance(
            &row("i1", "Orch", OrchestrationStatus::Pending, 1),
            Expect::Any,
        )
        .await
        .unwrap();
    req.fence = Some(LeaseFence {
        partition: 0,
        epoch: 1,
    });
    let err = store.checkpoint(req).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err}");
    assert!(store.load_history(&iid("i1")).await.unwrap().is_none());
    assert_eq!(store.stats(QueueName::WorkItems).await.unwrap().length, 0);
}

#[tokio::test]
async fn oversized_outbound_is_rejected_before_anything_is_written() {
    let dir = TestDir::new();
    let store = open(&dir.file("c.db"), &clock());
    let mut req = first_checkpoint("big");
    req.outbound = vec![OutboundMessage {
        claim: None,
        queue: QueueName::WorkItems,
        message: msg(&"x".repeat(taskhub_storage::MAX_MESSAGE_BYTES + 1)),
    }];
    let err = store.checkpoint(req).await.unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err}");
    assert!(store.load_history(&iid("big")).await.unwrap().is_none());
}

#[tokio::test]
async fn a_corrupt_event_is_reported_not_panicked() {
    let dir = TestDir::new();
    let path = dir.file("c.db");
    let store = open(&path, &clock());
    store.checkpoint(first_checkpoint("i1")).await.unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE history_chunks SET events = '{\"v\":99}'", [])
            .unwrap();
    }
    let err = store.load_history(&iid("i1")).await.unwrap_err();
    assert!(matches!(err, StorageError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("i1"), "{err}");
}

#[tokio::test]
async fn events_with_line_breaks_in_their_payloads_come_back_as_written() {
    // A turn's events are stored as one chunk, one encoded event per line: line breaks
    // inside payloads and names must not split an event.
    use taskhub_core::{EventKind, HistoryEvent, Payload};
    use taskhub_storage::{CheckpointStore, HistoryStore};
    let dir = TestDir::new();
    let store = open(&dir.file("c.db"), &clock());
    let mut req = first_checkpoint("i1");
    let scheduled = HistoryEvent::new(
        Timestamp::from_millis(2),
        EventKind::TaskScheduled {
            task_id: 0,
            name: "line\nbreak".into(),
            version: None,
            input: Payload::from_json("\"a\\nb\\r\\n\"").unwrap(),
            attempt: 1,
            tags: Default::default(),
        },
    );
    let events = vec![event(1), scheduled, event(3)];
    if let Some(h) = req.history.as_mut() {
        h.events = events.clone();
    }
    store.checkpoint(req).await.unwrap();
    let loaded = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(loaded.events, events);
}

#[tokio::test]
async fn short_and_long_histories_load_the_same_on_either_thread() {
    // A history of up to 64 events loads on the calling thread, a longer one on a blocking
    // thread: both give back every event in order, across several chunks.
    use taskhub_storage::{CheckpointStore, HistoryStore};
    let dir = TestDir::new();
    let store = open(&dir.file("c.db"), &clock());
    let mut req = first_checkpoint("i1");
    let mut all = vec![event(0)];
    if let Some(h) = req.history.as_mut() {
        h.events = all.clone();
    }
    store.checkpoint(req).await.unwrap();
    for chunk in 0..20_u64 {
        let loaded = store.load_history(&iid("i1")).await.unwrap().unwrap();
        assert_eq!(loaded.events, all, "after {chunk} more chunks");
        let more: Vec<_> = (0..5).map(|k| event(1 + chunk * 5 + k)).collect();
        crate::common::append_events(&store, "i1", &loaded, more.clone()).await;
        all.extend(more);
    }
    let loaded = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(loaded.events.len(), 101);
    assert_eq!(loaded.events, all);
}

#[tokio::test]
async fn a_write_longer_than_a_chunk_is_split_and_loads_whole() {
    // A chunk holds at most 16 MiB of encoded events (SQLite refuses values over 1 GB): two
    // events of 9 MiB written together become two chunks, and load back in order.
    use taskhub_core::{EventKind, HistoryEvent, Payload};
    use taskhub_storage::{CheckpointStore, HistoryStore};
    let dir = TestDir::new();
    let path = dir.file("c.db");
    let store = open(&path, &clock());
    let big = |task_id: u64| {
        HistoryEvent::new(
            Timestamp::from_millis(2),
            EventKind::TaskScheduled {
                task_id,
                name: "Big".into(),
                version: None,
                input: Payload::from_json(format!("\"{}\"", "x".repeat(9 << 20))).unwrap(),
                attempt: 1,
                tags: Default::default(),
            },
        )
    };
    let events = vec![event(1), big(0), big(1)];
    let mut req = first_checkpoint("i1");
    if let Some(h) = req.history.as_mut() {
        h.events = events.clone();
    }
    store.checkpoint(req).await.unwrap();
    let loaded = store.load_history(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(loaded.events, events);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let chunks: i64 = conn
        .query_row("SELECT COUNT(*) FROM history_chunks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        chunks, 2,
        "the first event and a 9 MiB one; the second 9 MiB one"
    );
}
