//! Workers whose protos have no completion token: the Go SDK
//! (`github.com/microsoft/durabletask-go` v0.6.0). Each case sends what its worker sends
//! (`client/worker_grpc.go`): `Hello`, an empty `GetWorkItemsRequest{}`, and completions
//! that carry only the instance ID (`OrchestratorResponse{InstanceId, Actions, CustomStatus}`,
//! `processOrchestrationWorkItem`) or the instance and task IDs
//! (`ActivityResponse{InstanceId, TaskId, Result | FailureDetails}`,
//! `processActivityWorkItem`), from a gRPC-Go client (`user-agent: grpc-go/1.56.3`). A
//! completion is matched only to an item that a stream on its own connection holds, and one
//! that matches nothing (late) is answered OK and dropped; such a worker gets no health pings
//! (its `WorkItem` has no such variant) and no entity batches (it declares none and has no
//! entity support). The Java SDK 1.5.0 (`com.microsoft:durabletask-client`,
//! `DurableTaskGrpcWorker.java`, `startAndBlock`) completes the same way and runs its items
//! one after the other on its stream's thread: it is handed one at a time.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::sdk::{activity, first_turn, schedule_task, waits_until, DispatchServer, FakeWorker};
use common::serving::{client_as, work_items};
use taskhub::executor::ExecutorError;
use taskhub::executor::{Decision, EntityOperation, EntityWork, RemoteExecutor};
use taskhub::EntityId;
use taskhub::Payload;
use taskhub_grpc::proto::{work_item, ActivityResponse, GetWorkItemsRequest, OrchestratorResponse};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;

const GO_USER_AGENT: &str = "grpc-go/1.56.3";
const JAVA_USER_AGENT: &str = "grpc-java-netty/1.59.0";

/// A worker as the Go SDK connects one: `Hello`, then `GetWorkItems` with nothing declared.
async fn go_worker(server: &DispatchServer) -> FakeWorker {
    legacy_worker(server, GO_USER_AGENT).await
}

/// A worker of a tokenless SDK whose gRPC library says `user_agent`.
async fn legacy_worker(server: &DispatchServer, user_agent: &str) -> FakeWorker {
    let mut client = client_as(server.addr, user_agent).await;
    client.hello(()).await.unwrap();
    work_items(client, GetWorkItemsRequest::default()).await
}

async fn real_server() -> DispatchServer {
    DispatchServer::start(Arc::new(SystemClock::new()), DispatcherSettings::default()).await
}

fn schedule_hello() -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: "o1".into(),
        actions: vec![schedule_task(0, "SayHello", "\"Tokyo\"")],
        custom_status: Some("\"going\"".into()),
        ..OrchestratorResponse::default()
    }
}

fn hello_done(instance: &str, task: i32) -> ActivityResponse {
    ActivityResponse {
        instance_id: instance.into(),
        task_id: task,
        result: Some("\"Hello Tokyo!\"".into()),
        ..ActivityResponse::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_worker_completes_turns_and_activities_without_a_token() {
    let server = real_server().await;
    let mut w = go_worker(&server).await;
    let turn = server.orchestrate(first_turn("o1", "Greet"));
    let item = w.expect().await;
    assert!(matches!(
        item.request,
        Some(work_item::Request::OrchestratorRequest(_))
    ));
    w.answer_turn(schedule_hello()).await.unwrap();
    let decision = turn.await.unwrap().unwrap();
    assert!(matches!(
        decision.decisions.as_slice(),
        [Decision::ScheduleActivity { task_id: 0, name, .. }] if name == "SayHello"
    ));
    assert_eq!(
        decision.custom_status,
        Some(Payload::from_json("\"going\"").unwrap())
    );

    let act = server.run_activity(activity("o1", "SayHello"));
    w.expect().await;
    w.answer_activity(hello_done("o1", 0)).await.unwrap();
    let outcome = act.await.unwrap().unwrap();
    assert_eq!(outcome.unwrap().as_str(), "\"Hello Tokyo!\"");
    // The same answer again finds nothing out: taken and dropped (the worker's loop goes on).
    w.answer_activity(hello_done("o1", 0)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_a_token_from_another_connection_or_for_another_item_completes_nothing() {
    let server = real_server().await;
    let mut w = go_worker(&server).await;
    let act = server.run_activity(activity("o1", "SayHello"));
    w.expect().await;

    // Another connection (a second Go client) did not receive it.
    let mut stranger = client_as(server.addr, GO_USER_AGENT).await;
    stranger
        .complete_activity_task(hello_done("o1", 0))
        .await
        .unwrap();
    // On the right connection: another task, another instance, or the other kind.
    for wrong in [hello_done("o1", 1), hello_done("o2", 0)] {
        w.answer_activity(wrong).await.unwrap();
    }
    w.answer_turn(OrchestratorResponse {
        instance_id: "o1".into(),
        ..OrchestratorResponse::default()
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!act.is_finished(), "the activity is still out");

    w.answer_activity(hello_done("o1", 0)).await.unwrap();
    assert!(act.await.unwrap().unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_items_of_a_closed_stream_are_not_matched_on_its_connection_again() {
    let server = real_server().await;
    let mut w = go_worker(&server).await;
    let act = server.run_activity(activity("o1", "SayHello"));
    w.expect().await;
    // The Go SDK reconnects its stream on the same channel after a stream error: the item of
    // the old stream went back and out again, to the new stream.
    drop(w.stream);
    let mut again = w
        .client
        .get_work_items(GetWorkItemsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let item = tokio::time::timeout(Duration::from_secs(10), again.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(
        item.request,
        Some(work_item::Request::ActivityRequest(_))
    ));
    // The answer matches the item the new stream holds: answered once.
    w.client
        .complete_activity_task(hello_done("o1", 0))
        .await
        .unwrap();
    assert!(act.await.unwrap().unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_worker_gets_no_health_pings_and_no_entity_batches() {
    let (server, clock) = DispatchServer::on_manual_clock(DispatcherSettings::default()).await;
    let mut go = go_worker(&server).await;
    let d = server.dispatcher.clone();
    let batch = tokio::spawn(async move {
        d.run_entity(EntityWork::new(
            EntityId::new("counter", "a").unwrap(),
            None,
            vec![EntityOperation::new(
                "r0".to_owned(),
                "add".to_owned(),
                Payload::from_json("1").unwrap(),
            )],
        ))
        .await
    });
    // Past a ping interval (30 s), within the busy wait (60 s): the batch still waits.
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(Duration::from_secs(31));
    let got = tokio::time::timeout(Duration::from_millis(500), go.stream.message()).await;
    assert!(got.is_err(), "nothing for the Go worker: {got:?}");

    // A worker of another SDK on the same hub gets the batch, and pings.
    let mut other = server.worker(1, 1).await;
    let first = other.expect().await;
    assert!(
        matches!(first.request, Some(work_item::Request::EntityRequestV2(_))),
        "{first:?}"
    );
    clock.advance(Duration::from_secs(20));
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(Duration::from_secs(20));
    other.expect_health_ping().await;
    batch.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_worker_is_handed_one_item_at_a_time() {
    let server = real_server().await;
    // Java 1.5.0 sends `GetWorkItemsRequest.newBuilder().build()`: nothing declared.
    let mut java = legacy_worker(&server, JAVA_USER_AGENT).await;
    let mut calls = Vec::new();
    for i in 0..3 {
        let d = server.dispatcher.clone();
        calls.push(tokio::spawn(async move {
            d.run_activity(activity(&format!("a{i}"), "Slow")).await
        }));
    }
    let turn = server.orchestrate(first_turn("t1", "Greet"));
    let first = java.expect().await;
    // It runs the first inline: nothing else is handed to it meanwhile.
    java.expect_none().await;
    let Some(work_item::Request::ActivityRequest(a)) = &first.request else {
        panic!("{first:?}")
    };
    let instance = a
        .orchestration_instance
        .as_ref()
        .unwrap()
        .instance_id
        .clone();
    java.answer_activity(hello_done(&instance, 0))
        .await
        .unwrap();
    // Then the next, one by one, each after the answer to the one before.
    let mut seen = vec![instance];
    for _ in 0..3 {
        let item = java.expect().await;
        java.expect_none().await;
        match &item.request {
            Some(work_item::Request::ActivityRequest(a)) => {
                let id = a
                    .orchestration_instance
                    .as_ref()
                    .unwrap()
                    .instance_id
                    .clone();
                java.answer_activity(hello_done(&id, 0)).await.unwrap();
                seen.push(id);
            }
            Some(work_item::Request::OrchestratorRequest(o)) => {
                java.answer_turn(OrchestratorResponse {
                    instance_id: o.instance_id.clone(),
                    ..OrchestratorResponse::default()
                })
                .await
                .unwrap();
                seen.push(o.instance_id.clone());
            }
            other => panic!("{other:?}"),
        }
    }
    seen.sort();
    assert_eq!(seen, ["a0", "a1", "a2", "t1"]);
    for c in calls {
        assert!(c.await.unwrap().unwrap().is_ok());
    }
    turn.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_that_no_busy_worker_takes_within_the_busy_wait_goes_back_as_busy() {
    let (server, clock) = DispatchServer::on_manual_clock(DispatcherSettings::default()).await;
    let mut java = legacy_worker(&server, JAVA_USER_AGENT).await;
    let slow = server.run_activity(activity("a0", "Slow"));
    java.expect().await;
    // A turn behind the running activity: it waits here, not inside the worker.
    let turn = server.orchestrate(first_turn("t1", "Greet"));
    waits_until(&clock, &turn, Duration::from_secs(60)).await;
    let e = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ExecutorError::Busy { .. }), "{e:?}");
    assert!(e.to_string().contains("grpc_busy_wait"), "{e}");
    // The activity it held is untouched: its answer still counts.
    java.answer_activity(hello_done("a0", 0)).await.unwrap();
    assert!(slow.await.unwrap().unwrap().is_ok());
}
