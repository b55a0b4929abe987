//! A .NET orchestration that calls an entity without converting its entity events
//! (`ConvertOrchestrationEntityEvents` off: the default outside the managed scheduler). Its
//! worker sends the call as an event to `@name@key` named `op`, carrying DT Core's
//! `RequestMessage` (microsoft/durabletask-dotnet at ec41350:
//! `src/Worker/Core/Shims/TaskOrchestrationEntityContext.cs` `SendOperationMessage`, lines
//! 190-215, which `src/Shared/Grpc/ProtoUtils.cs` lines 395-438 sends as a plain
//! `SendEventAction` when no conversion state is set). Taskhub runs it as the entity operation
//! it stands for; the orchestration's history keeps the `eventSent` it replays, and the answer
//! arrives as `entityOperationCompleted`, which that worker reads as DT Core's response event
//! (`EntityConversions.EncodeOperationCompleted`: an `EventRaised` named by the request ID).
//! The entity itself runs in a worker as `entityRequestV2`, with the call's caller.
#![allow(clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::calls::{start, wait_done};
use common::sdk::{FakeWorker, SdkServer};
use common::Backend;
use taskhub_grpc::proto::history_event::EventType;
use taskhub_grpc::proto::{
    orchestrator_action::OrchestratorActionType as A, work_item, CompleteOrchestrationAction,
    EntityBatchResult, OperationResult, OperationResultSuccess, OrchestrationInstance,
    OrchestrationStatus, OrchestratorAction, OrchestratorRequest, OrchestratorResponse,
    SendEventAction, WorkItem,
};

const REQUEST_ID: &str = "6f1c2b8e-1d2a-4c3b-9e4f-0a1b2c3d4e5f";

async fn next(w: &mut FakeWorker) -> WorkItem {
    w.next(Duration::from_secs(30)).await.expect("a work item")
}

fn turn(item: &WorkItem) -> &OrchestratorRequest {
    match &item.request {
        Some(work_item::Request::OrchestratorRequest(r)) => r,
        other => panic!("not a turn: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dotnet_orchestrations_entity_call_as_an_op_event_runs_and_is_answered() {
    let server = SdkServer::start(Backend::Sqlite).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;
    start(&mut c, "CallCounter", "net-1", None).await;

    // Turn 1: the call, as the .NET worker sends it.
    let item = next(&mut w).await;
    let r = turn(&item);
    let execution = r.execution_id.clone().unwrap();
    let message = format!(
        r#"{{"op":"add","signal":false,"input":"5","id":"{REQUEST_ID}","parent":"net-1","parentExecution":"{execution}"}}"#
    );
    w.client
        .complete_orchestrator_task(OrchestratorResponse {
            instance_id: "net-1".into(),
            completion_token: item.completion_token.clone(),
            actions: vec![OrchestratorAction {
                id: 0,
                orchestrator_action_type: Some(A::SendEvent(SendEventAction {
                    instance: Some(OrchestrationInstance {
                        instance_id: "@counter@k".into(),
                        execution_id: None,
                    }),
                    name: "op".into(),
                    data: Some(message),
                })),
            }],
            ..OrchestratorResponse::default()
        })
        .await
        .unwrap();

    // The entity batch: the operation, called by the orchestration.
    let item = next(&mut w).await;
    let Some(work_item::Request::EntityRequestV2(batch)) = &item.request else {
        panic!("not an entity batch: {item:?}")
    };
    assert_eq!(batch.instance_id, "@counter@k");
    let [op] = batch.operation_requests.as_slice() else {
        panic!("{batch:?}")
    };
    let Some(EventType::EntityOperationCalled(call)) = &op.event_type else {
        panic!("{op:?}")
    };
    assert_eq!(
        (
            call.request_id.as_str(),
            call.operation.as_str(),
            call.input.as_deref()
        ),
        (REQUEST_ID, "add", Some("5"))
    );
    assert_eq!(call.parent_instance_id.as_deref(), Some("net-1"));
    w.client
        .complete_entity_task(EntityBatchResult {
            results: vec![OperationResult {
                result_type: Some(taskhub_grpc::proto::operation_result::ResultType::Success(
                    OperationResultSuccess {
                        result: Some("5".into()),
                        ..OperationResultSuccess::default()
                    },
                )),
            }],
            entity_state: Some("5".into()),
            completion_token: item.completion_token.clone(),
            ..EntityBatchResult::default()
        })
        .await
        .unwrap();

    // Turn 2: the call replays as the event it sent; the answer comes as the protocol's.
    let item = next(&mut w).await;
    let r = turn(&item);
    assert!(
        r.past_events.iter().any(|e| matches!(
            &e.event_type,
            Some(EventType::EventSent(s)) if s.name == "op" && s.instance_id == "@counter@k"
        )),
        "{:?}",
        r.past_events
    );
    let answer = r
        .new_events
        .iter()
        .find_map(|e| match &e.event_type {
            Some(EventType::EntityOperationCompleted(done)) => Some(done.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no answer in {:?}", r.new_events));
    assert_eq!(
        (answer.request_id.as_str(), answer.output.as_deref()),
        (REQUEST_ID, Some("5"))
    );
    w.client
        .complete_orchestrator_task(OrchestratorResponse {
            instance_id: "net-1".into(),
            completion_token: item.completion_token.clone(),
            actions: vec![OrchestratorAction {
                id: 1,
                orchestrator_action_type: Some(A::CompleteOrchestration(
                    CompleteOrchestrationAction {
                        orchestration_status: OrchestrationStatus::Completed as i32,
                        result: Some("5".into()),
                        ..CompleteOrchestrationAction::default()
                    },
                )),
            }],
            ..OrchestratorResponse::default()
        })
        .await
        .unwrap();
    let done = wait_done(&mut c, "net-1").await;
    assert_eq!(done.output.as_deref(), Some("5"));
    server.stop().await;
}
