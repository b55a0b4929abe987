//! A purge by filter with a time budget stops when the budget is spent, says whether any
//! matching finished instance is left, purges at least one per call (so calling again always
//! ends), and never touches an active instance — not even one restarted after it was listed —
//! nor scans active rows (only finished ones are listed).

use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Expect, InstanceStore};

fn row(id: &str, status: OrchestrationStatus) -> InstanceRow {
    let now = Timestamp::from_millis(1_700_000_000_000);
    InstanceRow {
        instance_id: InstanceId::new(id).unwrap(),
        name: "Old".into(),
        version: None,
        execution_id: ExecutionId::random(),
        status,
        input: Payload::null(),
        output: None,
        failure: None,
        custom_status: None,
        created_at: now,
        updated_at: now,
        completed_at: status.is_terminal().then_some(now),
        scheduled_start: None,
        partition: 0,
        tags: Default::default(),
        executions: Vec::new(),
        etag: None,
    }
}

/// Writes a new row for each of `ids`, all with `status`.
async fn put_rows<S: InstanceStore + ?Sized>(
    store: &S,
    ids: impl IntoIterator<Item = String>,
    status: OrchestrationStatus,
) {
    for id in ids {
        store
            .put_instance(&row(&id, status), Expect::Absent)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_stops_the_purge_and_says_so() {
    let store = memory_store();
    let done = (0..30).map(|i| format!("done-{i:02}"));
    put_rows(store.as_ref(), done, OrchestrationStatus::Completed).await;
    put_rows(
        store.as_ref(),
        ["still-running".into()],
        OrchestrationStatus::Running,
    )
    .await;
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let client = hub.client();
    let query = InstanceQuery {
        name: Some("Old".into()),
        ..InstanceQuery::default()
    };

    // No budget at all: one instance per call, and each call says more are left.
    let first = client
        .purge_where_within(&query, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        first,
        PurgeOutcome {
            purged: 1,
            finished: false
        }
    );
    let mut calls = 1;
    let mut purged = first.purged;
    loop {
        let step = client
            .purge_where_within(&query, Duration::ZERO)
            .await
            .unwrap();
        calls += 1;
        purged += step.purged;
        if step.finished {
            break;
        }
        assert_eq!(step.purged, 1, "{step:?}");
        assert!(calls < 100, "the purge never finished");
    }
    assert_eq!(purged, 30);

    // An ample budget finishes in one call; the running instance is never purged.
    let again = client
        .purge_where_within(&query, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(
        again,
        PurgeOutcome {
            purged: 0,
            finished: true
        }
    );
    let left = client.list(&query).await.unwrap();
    let ids: Vec<&str> = left
        .instances
        .iter()
        .map(|r| r.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["still-running"]);
}

/// An instance restarted between the purge's listing and its purge is skipped, not an error
/// that ends the whole purge: the others are purged and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_restarted_after_it_was_listed_is_skipped() {
    use taskhub_storage::faults::{FaultPlan, Op, Trigger};
    use taskhub_storage::ManualClock;

    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let ids = ["a-done", "b-restarted", "c-done"].map(String::from);
    put_rows(store.as_ref(), ids, OrchestrationStatus::Completed).await;
    let hub = TaskHub::open_with_clock(store.clone(), fast_settings(), clock.clone())
        .await
        .unwrap();
    let client = hub.client();
    // The purge reads each listed row again before it deletes it: hold the second read until
    // the clock moves, and restart that instance meanwhile.
    store.faults().set_plan(
        FaultPlan::none().delay(Trigger::nth_of(Op::GetInstance, 2), Duration::from_secs(1)),
    );
    let purge = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .purge_where_within(&InstanceQuery::default(), Duration::from_secs(3600))
                .await
        }
    });
    while store.faults().calls(Op::GetInstance) < 2 {
        tokio::task::yield_now().await;
    }
    let listed = store
        .get_instance(&InstanceId::new("b-restarted").unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut running = row("b-restarted", OrchestrationStatus::Running);
    running.execution_id = ExecutionId::random();
    store
        .put_instance(&running, Expect::ETag(listed.etag.clone().unwrap()))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(1));
    let outcome = purge
        .await
        .unwrap()
        .expect("the purge goes on past the restarted instance");
    assert_eq!(
        outcome,
        PurgeOutcome {
            purged: 2,
            finished: true
        }
    );
    let left = client.list(&InstanceQuery::default()).await.unwrap();
    let ids: Vec<&str> = left
        .instances
        .iter()
        .map(|r| r.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["b-restarted"]);
}

/// Only finished rows are listed: active instances matching the filter are not scanned page by
/// page (the budget is looked at between purges, so a scan of active rows would escape it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_finished_rows_are_listed() {
    use taskhub_storage::faults::Op;

    let store = memory_store();
    let running = (0..250).map(|i| format!("a-running-{i:03}"));
    put_rows(store.as_ref(), running, OrchestrationStatus::Running).await;
    put_rows(
        store.as_ref(),
        ["z-done".into()],
        OrchestrationStatus::Failed,
    )
    .await;
    let hub = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let client = hub.client();
    let before = store.faults().calls(Op::ListInstances);
    let outcome = client
        .purge_where_within(&InstanceQuery::default(), Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        PurgeOutcome {
            purged: 1,
            finished: true
        }
    );
    assert_eq!(
        store.faults().calls(Op::ListInstances) - before,
        1,
        "one page of finished rows, not three pages of running ones"
    );
    // Statuses asked for that are not finished purge nothing.
    let running_only = InstanceQuery {
        statuses: vec![OrchestrationStatus::Running],
        ..InstanceQuery::default()
    };
    assert_eq!(
        client.purge_where(&running_only).await.unwrap(),
        0,
        "a running instance is never purged"
    );
    assert_eq!(
        client
            .list(&InstanceQuery::default())
            .await
            .unwrap()
            .instances
            .len(),
        100
    );
}
