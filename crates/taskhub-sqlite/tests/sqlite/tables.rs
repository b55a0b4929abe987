//! Instances, partitions, payloads and dead letters on SQLite.

use std::collections::HashSet;

use crate::common::{clock, iid, open, row, TestDir};
use taskhub_core::{FailureDetails, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::{
    DeadLetter, DeadLetterStore, ETag, Expect, InstanceQuery, InstanceStore, PartitionStore,
    PayloadStore, QueueName, StorageError,
};

#[tokio::test]
async fn instance_rows_are_conditional_and_round_trip() {
    let dir = TestDir::new();
    let store = open(&dir.file("t.db"), &clock());
    let mut r = row("i1", "Orch", OrchestrationStatus::Failed, 5);
    r.version = Some("2".into());
    r.output = Some(Payload::from_json("{\"a\":[1,2]}").unwrap());
    r.failure = Some(FailureDetails {
        details: Some("trace".into()),
        non_retryable: true,
        ..FailureDetails::new("ActivityFailed", "boom")
    });
    r.custom_status = Some(Payload::from_json("\"half\"").unwrap());
    r.completed_at = Some(Timestamp::from_millis(9));
    r.scheduled_start = Some(Timestamp::from_millis(3));
    r.partition = 3;
    let e1 = store.put_instance(&r, Expect::Absent).await.unwrap();
    let got = store.get_instance(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(got.etag, Some(e1.clone()));
    assert_eq!(InstanceRowEq(got), InstanceRowEq(r.clone()));
    assert!(matches!(
        store.put_instance(&r, Expect::Absent).await,
        Err(StorageError::Conflict { .. })
    ));
    let e2 = store
        .put_instance(&r, Expect::ETag(e1.clone()))
        .await
        .unwrap();
    assert_ne!(e1, e2);
    assert!(matches!(
        store.put_instance(&r, Expect::ETag(e1)).await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(store.delete_instance(&iid("i1")).await.unwrap());
    assert!(!store.delete_instance(&iid("i1")).await.unwrap());
    assert!(matches!(
        store.put_instance(&r, Expect::ETag(e2.clone())).await,
        Err(StorageError::Conflict { .. })
    ));
    // A recreated row never reuses an old ETag.
    let e3 = store.put_instance(&r, Expect::Absent).await.unwrap();
    assert_ne!(e3, e2);
}

#[tokio::test]
async fn an_update_moves_the_index_entries_of_the_columns_it_changes() {
    // An update names an indexed column only when its value changes: listings by status,
    // name and creation time must still follow every change, and only it.
    let dir = TestDir::new();
    let store = open(&dir.file("t.db"), &clock());
    let ids = |page: taskhub_storage::InstancePage| -> Vec<String> {
        page.instances
            .into_iter()
            .map(|r| r.instance_id.to_string())
            .collect()
    };
    let by =
        |statuses: Vec<OrchestrationStatus>, name: Option<&str>, from: Option<u64>| InstanceQuery {
            statuses,
            name: name.map(str::to_owned),
            created_from: from.map(Timestamp::from_millis),
            ..InstanceQuery::default()
        };
    let mut r = row("i1", "A", OrchestrationStatus::Pending, 10);
    let mut etag = store.put_instance(&r, Expect::Absent).await.unwrap();
    // Only updated_at changes: every index still finds the row under its old values.
    r.updated_at = Timestamp::from_millis(11);
    etag = store.put_instance(&r, Expect::ETag(etag)).await.unwrap();
    let q = by(vec![OrchestrationStatus::Pending], Some("A"), Some(10));
    assert_eq!(ids(store.list_instances(&q).await.unwrap()), ["i1"]);
    // Each indexed column in turn.
    r.status = OrchestrationStatus::Running;
    etag = store.put_instance(&r, Expect::ETag(etag)).await.unwrap();
    let pending = by(vec![OrchestrationStatus::Pending], None, None);
    assert!(ids(store.list_instances(&pending).await.unwrap()).is_empty());
    let running = by(vec![OrchestrationStatus::Running], Some("A"), None);
    assert_eq!(ids(store.list_instances(&running).await.unwrap()), ["i1"]);
    r.name = "B".into();
    etag = store.put_instance(&r, Expect::ETag(etag)).await.unwrap();
    assert!(ids(store
        .list_instances(&by(vec![], Some("A"), None))
        .await
        .unwrap())
    .is_empty());
    assert_eq!(
        ids(store
            .list_instances(&by(vec![], Some("B"), None))
            .await
            .unwrap()),
        ["i1"]
    );
    r.created_at = Timestamp::from_millis(20);
    store.put_instance(&r, Expect::ETag(etag)).await.unwrap();
    assert_eq!(
        ids(store
            .list_instances(&by(vec![], None, Some(15)))
            .await
            .unwrap()),
        ["i1"]
    );
    let got = store.get_instance(&iid("i1")).await.unwrap().unwrap();
    assert_eq!(InstanceRowEq(got), InstanceRowEq(r));
}

/// Compares rows without their ETags.
#[derive(Debug)]
struct InstanceRowEq(taskhub_storage::InstanceRow);

impl PartialEq for InstanceRowEq {
    fn eq(&self, other: &Self) -> bool {
        let mut a = self.0.clone();
        let mut b = other.0.clone();
        a.etag = None;
        b.etag = None;
        a == b
    }
}

#[tokio::test]
async fn listing_filters_and_pages_visit_every_row_once() {
    let dir = TestDir::new();
    let store = open(&dir.file("t.db"), &clock());
    let statuses = [
        OrchestrationStatus::Running,
        OrchestrationStatus::Completed,
        OrchestrationStatus::Failed,
    ];
    for i in 0..57u64 {
        let id = if i % 5 == 0 {
            format!("東京-{i:03}")
        } else {
            format!("order-{i:03}")
        };
        let name = if i % 2 == 0 { "Even" } else { "Odd" };
        let r = row(&id, name, statuses[(i % 3) as usize], 1000 + i);
        store.put_instance(&r, Expect::Any).await.unwrap();
    }
    let collect = |query: InstanceQuery| {
        let store = &store;
        async move {
            let mut ids = Vec::new();
            let mut q = query;
            loop {
                let page = store.list_instances(&q).await.unwrap();
                assert!(page.instances.len() <= q.page_size.max(1));
                ids.extend(
                    page.instances
                        .into_iter()
                        .map(|r| r.instance_id.to_string()),
                );
                match page.continuation {
                    Some(token) => q.continuation = Some(token),
                    None => return ids,
                }
            }
        }
    };
    let all = collect(InstanceQuery {
        page_size: 7,
        ..InstanceQuery::default()
    })
    .await;
    assert_eq!(all.len(), 57);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "ordered by instance ID");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 57);

    let tokyo = collect(InstanceQuery {
        instance_id_prefix: Some("東京".into()),
        page_size: 4,
        ..InstanceQuery::default()
    })
    .await;
    assert_eq!(tokyo.len(), 12);
    assert!(tokyo.iter().all(|id| id.starts_with("東京")));

    let filtered = collect(InstanceQuery {
        statuses: vec![OrchestrationStatus::Completed, OrchestrationStatus::Failed],
        name: Some("Odd".into()),
        created_from: Some(Timestamp::from_millis(1010)),
        created_to: Some(Timestamp::from_millis(1040)),
        instance_id_prefix: Some("order-".into()),
        page_size: 2,
        ..InstanceQuery::default()
    })
    .await;
    let expected: Vec<String> = (10..40u64)
        .filter(|i| i % 2 == 1 && i % 3 != 0 && i % 5 != 0)
        .map(|i| format!("order-{i:03}"))
        .collect();
    assert_eq!(filtered, expected);

    let err = store
        .list_instances(&InstanceQuery {
            page_size: 1001,
            ..InstanceQuery::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::InvalidArgument(_)), "{err}");
    let default_page = store
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(default_page.instances.len(), 57);
    assert!(default_page.continuation.is_none());
}

#[tokio::test]
async fn hub_and_partition_rows() {
    let dir = TestDir::new();
    let store = open(&dir.file("t.db"), &clock());
    assert!(store.hub_info().await.unwrap().is_none());
    assert!(matches!(
        store.set_partition_count(2).await,
        Err(StorageError::NotFound { .. })
    ));
    for bad in [0, 17] {
        assert!(matches!(
            store.create_hub(bad, Timestamp::EPOCH).await,
            Err(StorageError::InvalidArgument(_))
        ));
    }
    let info = store
        .create_hub(3, Timestamp::from_millis(5))
        .await
        .unwrap();
    assert_eq!(info.partition_count, 3);
    let again = store
        .create_hub(8, Timestamp::from_millis(6))
        .await
        .unwrap();
    assert_eq!(again, info, "an existing hub is left unchanged");
    let rows = store.list_partitions().await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.partition).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(rows.iter().all(|r| r.epoch == 0 && r.owner.is_none()));

    let mut p1 = rows[1].clone();
    p1.owner = Some("w1".into());
    p1.epoch = 1;
    let e = store
        .put_partition(&p1, rows[1].etag.as_ref())
        .await
        .unwrap();
    assert_ne!(Some(&e), rows[1].etag.as_ref());
    assert!(matches!(
        store.put_partition(&p1, rows[1].etag.as_ref()).await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(matches!(
        store.put_partition(&p1, None).await,
        Err(StorageError::Conflict { .. })
    ));
    let mut p5 = p1.clone();
    p5.partition = 5;
    store.put_partition(&p5, None).await.unwrap();
    assert!(matches!(
        store.put_partition(&p5, Some(&ETag("1".into()))).await,
        Err(StorageError::Conflict { .. })
    ));
    store.set_partition_count(6).await.unwrap();
    assert_eq!(store.hub_info().await.unwrap().unwrap().partition_count, 6);
    let stored = store.list_partitions().await.unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[1].owner.as_deref(), Some("w1"));
    assert_eq!(stored[1].etag, Some(e));
}

#[tokio::test]
async fn payloads_and_dead_letters() {
    let dir = TestDir::new();
    let store = open(&dir.file("t.db"), &clock());
    let i = iid("p");
    store.put_payload(&i, "in", vec![1, 2, 3]).await.unwrap();
    store.put_payload(&i, "in", vec![0, 255]).await.unwrap();
    store.put_payload(&i, "out", vec![]).await.unwrap();
    store
        .put_payload(&iid("other"), "in", vec![9])
        .await
        .unwrap();
    assert_eq!(
        store.get_payload(&i, "in").await.unwrap(),
        Some(vec![0, 255])
    );
    assert_eq!(store.get_payload(&i, "out").await.unwrap(), Some(vec![]));
    assert_eq!(store.delete_payloads(&i).await.unwrap(), 2);
    assert_eq!(store.get_payload(&i, "in").await.unwrap(), None);
    assert_eq!(
        store.get_payload(&iid("other"), "in").await.unwrap(),
        Some(vec![9])
    );

    let letter = |n: u32| DeadLetter {
        id: "ignored".into(),
        queue: if n.is_multiple_of(2) {
            QueueName::WorkItems
        } else {
            QueueName::Control(n)
        },
        body: format!("body {n}"),
        reason: "poison".into(),
        dequeue_count: n,
        dead_lettered_at: Timestamp::from_millis(u64::from(n)),
    };
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(store.add_dead_letter(letter(n)).await.unwrap());
    }
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 5);
    let page = store.list_dead_letters(None, 2).await.unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0].body, "body 0");
    let rest = store
        .list_dead_letters(Some(&page[1].id), 10)
        .await
        .unwrap();
    assert_eq!(
        rest.iter().map(|l| l.dequeue_count).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    assert_eq!(rest[1].queue, QueueName::Control(3));
    let taken = store.take_dead_letter(&ids[3]).await.unwrap().unwrap();
    assert_eq!(taken.id, ids[3]);
    assert!(store.take_dead_letter(&ids[3]).await.unwrap().is_none());
    assert!(store.take_dead_letter("nonsense").await.unwrap().is_none());
    assert_eq!(store.list_dead_letters(None, 10).await.unwrap().len(), 4);
    // IDs are never reused, even for the newest letter after a take.
    store.take_dead_letter(&ids[4]).await.unwrap().unwrap();
    let new_id = store.add_dead_letter(letter(6)).await.unwrap();
    assert!(!ids.contains(&new_id));
}
