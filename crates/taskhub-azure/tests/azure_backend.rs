//! What the Azure backend does beyond the seam's conformance suite: table limits (batches,
//! property size), the history sentinel's fence, and clear errors. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "helpers outside #[test] fns: a failed expectation is the point"
)]

mod common;

use std::sync::Arc;

use taskhub_azure::{AzureError, AzureOptions, AzureStore, StorageAccount};
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, DeadLetter, DeadLetterStore, Expect, HistoryStore,
    HistoryWrite, InstanceRow, InstanceStore, LeaseFence, ManualClock, NewQueueMessage,
    PartitionStore, QueueName, QueueStore, StorageError, TaskHubStore,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

async fn open() -> AzureStore {
    common::create_store(common::account(), Arc::new(ManualClock::new(START))).await
}

fn raised(i: usize, size: usize) -> HistoryEvent {
    HistoryEvent::new(
        Timestamp::from_millis(START.as_millis() + i as u64),
        EventKind::EventRaised {
            name: format!("e{i}"),
            input: Payload::from_json(format!("\"{}\"", "x".repeat(size))).unwrap(),
        },
    )
}

fn write(
    instance: &str,
    execution: &str,
    expected: Option<taskhub_storage::ETag>,
    new_execution: bool,
    events: Vec<HistoryEvent>,
) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new(instance).unwrap(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new(execution).unwrap(),
            expected,
            new_execution,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// A checkpoint of more events than one table batch holds (100 operations) is split in order,
/// and an event over the table property limit goes to a blob; both load back exactly, and a
/// new execution replaces them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_over_one_batch_and_over_the_property_limit_round_trip() {
    let s = open().await;
    let id = InstanceId::new("big").unwrap();
    let mut events: Vec<HistoryEvent> = (0..250).map(|i| raised(i, 10)).collect();
    events[7] = raised(7, 100_000);
    s.checkpoint(write("big", "e1", None, true, events.clone()))
        .await
        .expect("first checkpoint");
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.events, events);

    let more: Vec<HistoryEvent> = (250..380).map(|i| raised(i, 5)).collect();
    s.checkpoint(write("big", "e1", Some(loaded.etag), false, more.clone()))
        .await
        .expect("append");
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    events.extend(more);
    assert_eq!(loaded.events.len(), 380);
    assert_eq!(loaded.events, events);

    let fresh: Vec<HistoryEvent> = (0..120).map(|i| raised(1000 + i, 3)).collect();
    s.checkpoint(write("big", "e2", Some(loaded.etag), true, fresh.clone()))
        .await
        .expect("new execution");
    let loaded = s.load_history(&id).await.unwrap().unwrap();
    assert_eq!(loaded.execution_id.as_str(), "e2");
    assert_eq!(loaded.events, fresh);

    s.delete_history(&id).await.expect("purge");
    assert!(s.load_history(&id).await.unwrap().is_none());
}

/// Invariant 1's second line of defence: the sentinel remembers the epoch of its last writer,
/// and a checkpoint under an older epoch is fenced even when its read of the partition row
/// (here made stale on purpose by writing the row back to the old epoch) let it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_older_than_the_sentinels_last_writer_is_fenced() {
    let s = open().await;
    s.create_hub(1, START).await.unwrap();
    let take = |epoch: u64| {
        let s = &s;
        async move {
            let row = s.list_partitions().await.unwrap().remove(0);
            let next = taskhub_storage::PartitionRow {
                epoch,
                owner: Some(format!("w{epoch}")),
                ..row.clone()
            };
            s.put_partition(&next, row.etag.as_ref()).await.unwrap();
        }
    };
    take(2).await;
    let mut first = write("fenced", "e1", None, true, vec![raised(0, 1)]);
    first.fence = Some(LeaseFence {
        partition: 0,
        epoch: 2,
    });
    s.checkpoint(first)
        .await
        .expect("the owner at epoch 2 commits");
    let loaded = s
        .load_history(&InstanceId::new("fenced").unwrap())
        .await
        .unwrap()
        .unwrap();

    take(1).await; // a stale view of the partition row
    let mut stale = write(
        "fenced",
        "e1",
        Some(loaded.etag.clone()),
        false,
        vec![raised(1, 1)],
    );
    stale.fence = Some(LeaseFence {
        partition: 0,
        epoch: 1,
    });
    let result = s.checkpoint(stale).await;
    assert!(
        matches!(
            result,
            Err(StorageError::Fenced {
                attempted: 1,
                current: 2,
                ..
            })
        ),
        "expected Fenced by the sentinel, got {result:?}"
    );
    let after = s
        .load_history(&InstanceId::new("fenced").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after.events, loaded.events,
        "the fenced write changed nothing"
    );
}

/// Instance rows and dead letters over the table property limit round-trip through blobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_rows_and_dead_letters_round_trip() {
    let s = open().await;
    let id = InstanceId::new("large-row").unwrap();
    let input = Payload::from_json(format!("\"{}\"", "i".repeat(200_000))).unwrap();
    let row = InstanceRow {
        input,
        ..common::instance_row(
            &id,
            "Big",
            taskhub_core::OrchestrationStatus::Running,
            START,
        )
    };
    s.put_instance(&row, Expect::Absent).await.unwrap();
    let got = s.get_instance(&id).await.unwrap().unwrap();
    assert_eq!(InstanceRow { etag: None, ..got }, row);
    assert!(s.delete_instance(&id).await.unwrap());

    let body = "b".repeat(64 * 1024);
    let letter = DeadLetter {
        id: String::new(),
        queue: QueueName::Control(3),
        body: body.clone(),
        reason: "r".repeat(40_000),
        dequeue_count: 7,
        dead_lettered_at: START,
    };
    let id = s.add_dead_letter(letter.clone()).await.unwrap();
    let taken = s.take_dead_letter(&id).await.unwrap().unwrap();
    assert_eq!(taken, DeadLetter { id, ..letter });
}

/// Two hubs on one account never see each other's messages, and the queues carry the
/// original's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hubs_on_one_account_are_separate() {
    let (a, b) = (open().await, open().await);
    let q = QueueName::Control(3);
    assert!(a.queue_name(q).unwrap().ends_with("-control-03"));
    assert!(a
        .queue_name(QueueName::WorkItems)
        .unwrap()
        .ends_with("-workitems"));
    a.enqueue(
        q,
        vec![NewQueueMessage {
            body: "for a".to_owned(),
            delay: std::time::Duration::ZERO,
        }],
    )
    .await
    .unwrap();
    assert!(b
        .dequeue(q, 32, std::time::Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        a.dequeue(q, 32, std::time::Duration::from_secs(30))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(a.backend_name(), "azure");
}

/// A wrong key and an endpoint where nothing listens are one clear error each, not a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_or_an_unreachable_endpoint_is_a_clear_error() {
    let mut wrong = common::account();
    let text = common::connection_string().replace("AccountKey=Eby8", "AccountKey=AAAA");
    wrong = StorageAccount::from_connection_string(&text).unwrap_or(wrong);
    let err = AzureStore::open(AzureOptions {
        account: wrong,
        hub: common::unique_hub(),
        clock: Arc::new(ManualClock::new(START)),
    })
    .await
    .expect_err("a wrong key must fail");
    assert!(
        err.to_string().contains("account key") && !err.is_retryable(),
        "{err}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let nowhere = StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=AAAA;\
         BlobEndpoint=http://127.0.0.1:{port}/a;QueueEndpoint=http://127.0.0.1:{port}/a;\
         TableEndpoint=http://127.0.0.1:{port}/a"
    ))
    .unwrap();
    let err = AzureStore::open(AzureOptions {
        account: nowhere,
        hub: common::unique_hub(),
        clock: Arc::new(ManualClock::new(START)),
    })
    .await
    .expect_err("nothing listens there");
    assert!(
        matches!(&err, AzureError::Open(StorageError::Unavailable(m)) if m.contains(&port.to_string())),
        "{err}"
    );
}

/// Deleting a hub removes its objects: opened again it is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_hub_opens_again_empty() {
    let hub = common::unique_hub();
    let open_named = || {
        AzureStore::create(AzureOptions {
            account: common::account(),
            hub: hub.clone(),
            clock: Arc::new(ManualClock::new(START)),
        })
    };
    let s = open_named().await.unwrap();
    s.create_hub(2, START).await.unwrap();
    s.enqueue(
        QueueName::WorkItems,
        vec![NewQueueMessage {
            body: "old".to_owned(),
            delay: std::time::Duration::ZERO,
        }],
    )
    .await
    .unwrap();
    s.checkpoint(write("gone", "e1", None, true, vec![raised(0, 1)]))
        .await
        .unwrap();
    s.delete_hub().await.unwrap();

    let again = open_named().await.unwrap();
    assert!(again.hub_info().await.unwrap().is_none());
    assert_eq!(again.stats(QueueName::WorkItems).await.unwrap().length, 0);
    assert!(again
        .load_history(&InstanceId::new("gone").unwrap())
        .await
        .unwrap()
        .is_none());
}
