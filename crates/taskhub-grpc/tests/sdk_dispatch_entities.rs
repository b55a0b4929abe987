//! Entity batches through the dispatcher, driven as the runtime drives it (its
//! `RemoteExecutor::run_entity`) with a Rust gRPC client playing the SDK worker
//! (tests/common/sdk.rs): the `entityRequest` work item and its `CompleteEntityTask`, the
//! worker's declared `maxConcurrentEntityWorkItems`, abandon (to another worker at once), a
//! withdrawn batch's late completion refused, and a timeout on a manual clock.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::calls::{assert_says, Refused};

use std::sync::Arc;

use common::sdk::{held_past_the_timeout, DispatchServer, FakeWorker};
use taskhub::executor::{EntityOperation, EntityWork, RemoteExecutor};
use taskhub::EntityId;
use taskhub::Payload;
use taskhub_grpc::proto::{
    history_event::EventType, operation_result::ResultType, work_item, AbandonEntityTaskRequest,
    EntityBatchResult, GetWorkItemsRequest, OperationResult, OperationResultSuccess, WorkItem,
};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;
use tonic::Code;

async fn real_server() -> DispatchServer {
    DispatchServer::start(Arc::new(SystemClock::new()), DispatcherSettings::default()).await
}

/// A fake SDK worker declaring room for `entities` entity batches.
async fn entity_worker(server: &DispatchServer, entities: i32) -> FakeWorker {
    let mut client = server.client().await;
    let stream = client
        .get_work_items(GetWorkItemsRequest {
            max_concurrent_entity_work_items: entities,
            ..GetWorkItemsRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    FakeWorker { client, stream }
}

fn batch(key: &str, ops: &[&str]) -> EntityWork {
    EntityWork::new(
        EntityId::new("counter", key).unwrap(),
        Some(Payload::from_json("1").unwrap()),
        ops.iter()
            .enumerate()
            .map(|(i, op)| {
                EntityOperation::new(
                    format!("r{i}"),
                    (*op).to_owned(),
                    Payload::from_json("2").unwrap(),
                )
            })
            .collect(),
    )
}

/// The batch an `entityRequestV2` work item carries, as its operations' request IDs and names
/// (the SDKs read it so: `helpers.convert_to_entity_batch_request` in the Python SDK).
struct Batch {
    instance_id: String,
    entity_state: Option<String>,
    operations: Vec<(String, String)>,
}

fn request(item: &WorkItem) -> Batch {
    let Some(work_item::Request::EntityRequestV2(r)) = &item.request else {
        panic!("not an entity batch: {item:?}")
    };
    let operations = r
        .operation_requests
        .iter()
        .map(|e| match &e.event_type {
            Some(EventType::EntityOperationSignaled(s)) => {
                (s.request_id.clone(), s.operation.clone())
            }
            Some(EventType::EntityOperationCalled(c)) => {
                (c.request_id.clone(), c.operation.clone())
            }
            other => panic!("not an operation: {other:?}"),
        })
        .collect();
    Batch {
        instance_id: r.instance_id.clone(),
        entity_state: r.entity_state.clone(),
        operations,
    }
}

fn answer(token: &str, results: &[&str], state: &str) -> EntityBatchResult {
    EntityBatchResult {
        results: results
            .iter()
            .map(|r| OperationResult {
                result_type: Some(ResultType::Success(OperationResultSuccess {
                    result: Some((*r).to_owned()),
                    ..OperationResultSuccess::default()
                })),
            })
            .collect(),
        entity_state: Some(state.to_owned()),
        completion_token: token.to_owned(),
        ..EntityBatchResult::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_batch_goes_out_with_its_state_and_operations_and_its_results_come_back() {
    let server = real_server().await;
    let mut w = entity_worker(&server, 0).await;
    let d = server.dispatcher.clone();
    assert!(d.runs_entities());
    let call = tokio::spawn(async move { d.run_entity(batch("k", &["add", "get"])).await });
    let item = w.expect().await;
    let r = request(&item);
    assert_eq!(r.instance_id, "@counter@k");
    assert_eq!(r.entity_state.as_deref(), Some("1"));
    let ops: Vec<_> = r
        .operations
        .iter()
        .map(|(id, op)| (id.as_str(), op.as_str()))
        .collect();
    assert_eq!(ops, [("r0", "add"), ("r1", "get")]);
    w.answer_batch(answer(&item.completion_token, &["3", "3"], "3"))
        .await
        .unwrap();
    let out = call.await.unwrap().unwrap();
    assert_eq!(out.results.len(), 2);
    assert_eq!(out.results[1].as_ref().unwrap().as_str(), "3");
    assert_eq!(out.state.unwrap().as_str(), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_gets_no_more_entity_batches_than_it_asked_for() {
    let server = real_server().await;
    let mut w = entity_worker(&server, 2).await;
    let mut calls = Vec::new();
    for key in ["a", "b", "c"] {
        let d = server.dispatcher.clone();
        calls.push(tokio::spawn(async move {
            d.run_entity(batch(key, &["add"])).await
        }));
    }
    let first = w.expect().await;
    let second = w.expect().await;
    w.expect_none().await;
    w.answer_batch(answer(&first.completion_token, &["1"], "1"))
        .await
        .unwrap();
    let third = w.expect().await;
    w.expect_none().await;
    let mut keys: Vec<String> = [&first, &second, &third]
        .iter()
        .map(|i| request(i).instance_id.clone())
        .collect();
    keys.sort();
    assert_eq!(keys, ["@counter@a", "@counter@b", "@counter@c"]);
    for item in [&second, &third] {
        w.answer_batch(answer(&item.completion_token, &["1"], "1"))
            .await
            .unwrap();
    }
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().results.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_entity_batch_goes_to_another_worker_at_once() {
    let server = real_server().await;
    let mut a = entity_worker(&server, 5).await;
    let call = server.run_entity(batch("hot", &["add"]));
    let item = a.expect().await;
    let mut b = entity_worker(&server, 5).await;
    a.client
        .abandon_task_entity_work_item(AbandonEntityTaskRequest {
            completion_token: item.completion_token.clone(),
        })
        .await
        .unwrap();
    let again = b.expect().await;
    assert_eq!(request(&again).instance_id, "@counter@hot");
    assert_ne!(again.completion_token, item.completion_token);
    a.expect_none().await;
    // A's answer under the old token is refused; B's is taken.
    a.answer_batch(answer(&item.completion_token, &["9"], "9"))
        .await
        .refused(Code::NotFound);
    b.answer_batch(answer(&again.completion_token, &["2"], "2"))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap().state.unwrap().as_str(), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_entity_batch_is_refused_when_its_answer_comes_late() {
    let server = real_server().await;
    let mut w = entity_worker(&server, 1).await;
    // The runtime drops the future (its partition moved): the batch is withdrawn.
    let call = server.run_entity(batch("k", &["add"]));
    let item = w.expect().await;
    call.abort();
    let _ = call.await;
    let e = w
        .answer_batch(answer(&item.completion_token, &["3"], "3"))
        .await
        .refused(Code::NotFound);
    assert_says(&e, "withdrawn");
    // The worker has its room back: the next batch comes to it at once.
    let next = server.run_entity(batch("k2", &["add"]));
    let item = w.expect().await;
    assert_eq!(request(&item).instance_id, "@counter@k2");
    next.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_batch_held_past_its_timeout_times_out_and_its_late_answer_is_refused() {
    let (server, clock) = DispatchServer::on_manual_clock(DispatcherSettings::default()).await;
    let mut w = entity_worker(&server, 1).await;
    let call = server.run_entity(batch("k", &["add"]));
    let item = w.expect().await;
    held_past_the_timeout(&clock, call).await;
    w.answer_batch(answer(&item.completion_token, &["3"], "3"))
        .await
        .refused(Code::NotFound);
}
