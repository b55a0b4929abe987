//! Entity batch results without a completion token, as the .NET worker sends them on its older
//! `entityRequest` path (microsoft/durabletask-dotnet at ec41350:
//! `src/Worker/Grpc/GrpcDurableTaskWorker.Processor.cs` lines 443-448 run an `entityRequest`
//! with `OnRunEntityBatchAsync(batchRequest, cancellation)`, no `completionToken` and no
//! `operationInfos`; lines 1112-1119 then send `batchResult.ToEntityBatchResult(completionToken,
//! operationInfos)` with `CompleteEntityTaskAsync`; `src/Shared/Grpc/ProtoUtils.cs` lines
//! 907-925, `ToEntityBatchResult`, sets `CompletionToken = completionToken ?? string.Empty` and
//! `OperationInfos = { operationInfos ?? [] }`). Such a `CompleteEntityTask` names neither the
//! entity nor its operations. Taskhub sends `entityRequestV2` (with a token) only, but takes
//! such an answer as it takes the Go SDK's tokenless ones (`sdk_tokenless.rs`): matched to the
//! entity batch a stream on the same connection holds, never to one another connection was
//! given; among several, the `operationInfos` request IDs (what the .NET V2 path sends,
//! lines 450-462 and 1112-1114) choose, and without them the answer is refused
//! (`INVALID_ARGUMENT`, saying why).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use common::calls::Refused;

use std::sync::Arc;
use std::time::Duration;

use common::sdk::{DispatchServer, FakeWorker};
use common::serving::worker_as;
use taskhub::executor::RemoteExecutor;
use taskhub::executor::{EntityBatchOutcome, EntityOperation, EntityWork, ExecutorError};
use taskhub::EntityId;
use taskhub::Payload;
use taskhub_grpc::proto::{
    operation_result::ResultType, work_item, EntityBatchResult, GetWorkItemsRequest, OperationInfo,
    OperationResult, OperationResultSuccess, WorkItem,
};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;
use tokio::task::JoinHandle;
use tonic::Code;

/// What the .NET worker's gRPC library (Grpc.Net.Client) sends as its user agent.
const DOTNET_USER_AGENT: &str = "grpc-dotnet/2.65.0 (.NET 8.0.8; CLR 8.0.8; net8.0; linux; x64)";

async fn real_server() -> DispatchServer {
    DispatchServer::start(Arc::new(SystemClock::new()), DispatcherSettings::default()).await
}

/// A .NET-like worker on a connection of its own, declaring room for `entities` batches.
async fn dotnet_worker(server: &DispatchServer, entities: i32) -> FakeWorker {
    let request = GetWorkItemsRequest {
        max_concurrent_orchestration_work_items: 1,
        max_concurrent_activity_work_items: 1,
        max_concurrent_entity_work_items: entities,
        ..GetWorkItemsRequest::default()
    };
    worker_as(server.addr, DOTNET_USER_AGENT, request).await
}

/// A batch of one `add` on `@counter@KEY`, its request ID `req-KEY`.
fn batch(key: &str) -> EntityWork {
    EntityWork::new(
        EntityId::new("counter", key).unwrap(),
        Some(Payload::from_json("1").unwrap()),
        vec![EntityOperation::new(
            format!("req-{key}"),
            "add".to_owned(),
            Payload::from_json("2").unwrap(),
        )],
    )
}

/// Runs `batch(key)` through the dispatcher as the runtime does.
fn run(
    server: &DispatchServer,
    key: &str,
) -> JoinHandle<Result<EntityBatchOutcome, ExecutorError>> {
    let d = server.dispatcher.clone();
    let work = batch(key);
    tokio::spawn(async move { d.run_entity(work).await })
}

fn entity_of(item: &WorkItem) -> String {
    match &item.request {
        Some(work_item::Request::EntityRequestV2(r)) => r.instance_id.clone(),
        other => panic!("not an entity batch: {other:?}"),
    }
}

/// The answer the .NET worker's V1 path sends: one result, the new state, an empty token and no
/// `operationInfos` (ProtoUtils.cs lines 917-925).
fn v1_answer(result: &str) -> EntityBatchResult {
    EntityBatchResult {
        results: vec![OperationResult {
            result_type: Some(ResultType::Success(OperationResultSuccess {
                result: Some(result.to_owned()),
                ..OperationResultSuccess::default()
            })),
        }],
        entity_state: Some(result.to_owned()),
        completion_token: String::new(),
        ..EntityBatchResult::default()
    }
}

/// The state a finished batch call left.
async fn state_of(call: JoinHandle<Result<EntityBatchOutcome, ExecutorError>>) -> String {
    let out = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the batch answered within 10 s")
        .unwrap()
        .unwrap();
    out.state.unwrap().as_str().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenless_entity_result_completes_the_one_batch_its_connection_holds() {
    let server = real_server().await;
    let mut w = dotnet_worker(&server, 1).await;
    let call = run(&server, "a");
    let item = w.expect().await;
    assert_eq!(entity_of(&item), "@counter@a");
    assert!(!item.completion_token.is_empty());
    w.answer_batch(v1_answer("3")).await.unwrap();
    assert_eq!(state_of(call).await, "3");
    // The worker has room again: the next batch comes to it.
    let next = run(&server, "b");
    let item = w.expect().await;
    assert_eq!(entity_of(&item), "@counter@b");
    w.answer_batch(v1_answer("5")).await.unwrap();
    assert_eq!(state_of(next).await, "5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenless_entity_result_never_completes_a_batch_given_to_another_connection() {
    let server = real_server().await;
    let mut holder = dotnet_worker(&server, 1).await;
    let call = run(&server, "a");
    let item = holder.expect().await;
    assert_eq!(entity_of(&item), "@counter@a");
    // Another connection's answer without a token: taken and dropped (late, as the Go SDK's),
    // the batch still out at its holder.
    let mut other = server.client().await;
    other.complete_entity_task(v1_answer("99")).await.unwrap();
    // And a second .NET worker's connection holds nothing either.
    let mut idle = dotnet_worker(&server, 1).await;
    idle.answer_batch(v1_answer("98")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !call.is_finished(),
        "a batch completed from another connection"
    );
    holder
        .client
        .complete_entity_task(v1_answer("3"))
        .await
        .unwrap();
    assert_eq!(state_of(call).await, "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_batches_on_one_connection_need_operation_infos_to_tell_them_apart() {
    let server = real_server().await;
    let mut w = dotnet_worker(&server, 2).await;
    let a = run(&server, "a");
    let b = run(&server, "b");
    let mut entities = vec![entity_of(&w.expect().await), entity_of(&w.expect().await)];
    entities.sort();
    assert_eq!(entities, ["@counter@a", "@counter@b"]);

    // Nothing in the answer tells which: refused, naming why; neither batch is completed.
    let refused = w
        .answer_batch(v1_answer("7"))
        .await
        .refused(Code::InvalidArgument);
    assert!(
        refused.message().contains("hold 2 entity batches")
            && refused.message().contains("operationInfos"),
        "{}",
        refused.message()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!a.is_finished() && !b.is_finished());

    // The operations' request IDs choose: b's answer goes to b.
    let mut for_b = v1_answer("8");
    for_b.operation_infos = vec![OperationInfo {
        request_id: "req-b".into(),
        response_destination: None,
    }];
    w.answer_batch(for_b).await.unwrap();
    assert_eq!(state_of(b).await, "8");
    assert!(!a.is_finished());

    // One batch left on the connection: the plain V1 answer is a's.
    w.answer_batch(v1_answer("9")).await.unwrap();
    assert_eq!(state_of(a).await, "9");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenless_entity_result_naming_other_operations_completes_nothing() {
    let server = real_server().await;
    let mut w = dotnet_worker(&server, 1).await;
    let call = run(&server, "a");
    assert_eq!(entity_of(&w.expect().await), "@counter@a");
    let mut stranger = v1_answer("4");
    stranger.operation_infos = vec![OperationInfo {
        request_id: "req-zzz".into(),
        response_destination: None,
    }];
    w.answer_batch(stranger).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !call.is_finished(),
        "an answer to other operations completed the batch"
    );
    w.answer_batch(v1_answer("3")).await.unwrap();
    assert_eq!(state_of(call).await, "3");
}
