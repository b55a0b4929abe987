//! An instance-row write whose answer was lost (issue 20, item 7): the write lands at the
//! service, the connection drops before its answer, the HTTP layer sends it again, and the
//! service refuses the copy (409 on an insert: the row exists; 412 on a replace: its ETag moved
//! on, by this very write). The store reads the row back and, finding exactly the row it wrote,
//! reports success instead of a conflict (which would fail the checkpoint after its history
//! and messages were committed: the turn abandoned and retried, its outbox re-sent after the
//! grace). A real conflict is still one. Azurite behind a loopback proxy that loses chosen
//! answers: `scripts/with-azurite.sh cargo test -p taskhub-azure --test lost_row_answer`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
mod loopback;

use std::sync::Arc;

use loopback::proxy::{authority, Proxy};
use taskhub_core::{InstanceId, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::{Expect, InstanceRow, InstanceStore, ManualClock, StorageError};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

fn row(status: OrchestrationStatus, updated: u64) -> InstanceRow {
    InstanceRow {
        input: Payload::from_json("{\"n\":1}".to_owned()).unwrap(),
        updated_at: Timestamp::from_millis(START.as_millis() + updated),
        ..common::instance_row(
            &InstanceId::new("lost-answer").unwrap(),
            "Orders",
            status,
            START,
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_row_write_whose_answer_was_lost_is_not_a_conflict() {
    let mut account = common::account();
    let proxy = Proxy::start(authority(&account.table_endpoint)).await;
    account.table_endpoint = proxy.endpoint(&account.table_endpoint);
    let s = common::create_store(account, Arc::new(ManualClock::new(START))).await;
    let instances = |method: &'static str| {
        move |r: &loopback::proxy::Seen| r.method == method && r.target.contains("Instances")
    };

    // An insert (a client's start) whose answer is lost: the copy gets 409.
    let pending = row(OrchestrationStatus::Pending, 0);
    proxy.lose_answer(1, instances("POST"));
    let first = s
        .put_instance(&pending, Expect::Absent)
        .await
        .expect("the insert landed: its re-sent copy's 409 is not a conflict");
    let seen = proxy.seen();
    assert_eq!(
        seen.iter()
            .filter(|r| r.method == "POST" && r.target.contains("Instances"))
            .count(),
        2,
        "the insert was sent twice (its answer lost once)"
    );
    let stored = s.get_instance(&pending.instance_id).await.unwrap().unwrap();
    assert_eq!(
        stored.etag.as_ref(),
        Some(&first),
        "the ETag reported is the stored one"
    );

    // A replace (a turn's row) whose answer is lost: the copy gets 412.
    let running = row(OrchestrationStatus::Running, 10);
    proxy.lose_answer(1, instances("PUT"));
    let second = s
        .put_instance(&running, Expect::ETag(first.clone()))
        .await
        .expect("the replace landed: its re-sent copy's 412 is not a conflict");
    let stored = s.get_instance(&running.instance_id).await.unwrap().unwrap();
    assert_eq!(stored.status, OrchestrationStatus::Running);
    assert_eq!(stored.etag.as_ref(), Some(&second));

    // A real conflict is still one: a write from the stale ETag of another content.
    let stale = s
        .put_instance(
            &row(OrchestrationStatus::Completed, 20),
            Expect::ETag(first),
        )
        .await;
    assert!(
        matches!(stale, Err(StorageError::Conflict { .. })),
        "a write from a stale ETag must conflict: {stale:?}"
    );
    assert_eq!(
        s.get_instance(&running.instance_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        OrchestrationStatus::Running
    );
    s.delete_hub().await.unwrap();
}
