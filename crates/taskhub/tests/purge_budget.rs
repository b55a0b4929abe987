//! A purge by filter with a time budget stops when the budget is spent, says whether any
//! matching finished instance is left, purges at least one per call (so calling again always
//! ends), and never touches an active instance.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Expect, InstanceStore, SystemClock};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_stops_the_purge_and_says_so() {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    for i in 0..30 {
        store
            .put_instance(
                &row(&format!("done-{i:02}"), OrchestrationStatus::Completed),
                Expect::Absent,
            )
            .await
            .unwrap();
    }
    store
        .put_instance(
            &row("still-running", OrchestrationStatus::Running),
            Expect::Absent,
        )
        .await
        .unwrap();
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
