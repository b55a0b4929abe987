//! A purge deletes every History row of an instance even when some are already gone (issue
//! 20, item 9): on Azure an entity-group batch that deletes a missing row fails whole (the
//! changeset answers `404 ResourceNotFound`, nothing is deleted), and the purge used to skip
//! that batch, leaving up to 99 orphan rows behind. Azurite deletes the other rows instead, so
//! a loopback proxy gives the first delete batch the service's answer. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test purge_rows`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;
mod loopback;

use std::sync::Arc;

use loopback::proxy::{authority, Proxy};
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, ManualClock,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);
/// More events than one batch holds, so the purge deletes them in several batches.
const EVENTS: u64 = 150;

/// What the Table service answers a batch whose delete names a missing row: 202, and one
/// changeset response of 404 for the whole changeset (nothing in it was applied).
fn missing_row_answer() -> String {
    let body = "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n\
        --changesetresponse_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
        HTTP/1.1 404 Not Found\r\nContent-ID: 3\r\nX-Content-Type-Options: nosniff\r\n\
        Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n\
        {\"odata.error\":{\"code\":\"ResourceNotFound\",\"message\":{\"lang\":\"en-US\",\
        \"value\":\"3:The specified resource does not exist.\"}}}\r\n\
        --changesetresponse_1--\r\n--batchresponse_1--\r\n";
    format!(
        "HTTP/1.1 202 Accepted\r\nContent-Type: multipart/mixed; boundary=batchresponse_1\r\n\
         x-ms-request-id: 1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_with_a_row_already_gone_leaves_no_row_behind() {
    let mut account = common::account();
    let proxy = Proxy::start(authority(&account.table_endpoint)).await;
    account.table_endpoint = proxy.endpoint(&account.table_endpoint);
    let s = common::create_store(account, Arc::new(ManualClock::new(START))).await;
    let id = InstanceId::new("purged").unwrap();
    let events = (0..EVENTS)
        .map(|i| {
            HistoryEvent::new(
                Timestamp::from_millis(START.as_millis() + i),
                EventKind::EventRaised {
                    name: format!("e{i}"),
                    input: Payload::null(),
                },
            )
        })
        .collect();
    s.checkpoint(CheckpointRequest {
        instance_id: id.clone(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            new_execution: true,
            expected: None,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    })
    .await
    .unwrap();
    assert_eq!(
        s.history_footprint(&id).await.unwrap().0,
        usize::try_from(EVENTS).unwrap() + 1
    );
    // One row of each batch the purge will send is gone already.
    s.delete_history_event(&id, 3).await.unwrap();
    s.delete_history_event(&id, 120).await.unwrap();
    assert_eq!(
        s.history_footprint(&id).await.unwrap().0,
        usize::try_from(EVENTS).unwrap() - 1,
        "two event rows deleted ahead of the purge"
    );
    // The first delete batch (it names the missing row 3) gets the service's answer.
    proxy.answer(
        1,
        |r| r.method == "POST" && r.target.contains("$batch") && r.body.contains("DELETE "),
        missing_row_answer(),
    );
    s.delete_history(&id).await.unwrap();
    assert_eq!(
        s.history_footprint(&id).await.unwrap(),
        (0, 0),
        "(History rows, history blobs) left after the purge"
    );
    assert!(s.load_history(&id).await.unwrap().is_none());
    s.delete_hub().await.unwrap();
}
