//! The dispatcher that serves SDK workers, driven as the runtime drives it (its
//! `RemoteExecutor` side) with a Rust gRPC client playing the SDK worker (tests/common/sdk.rs):
//! work items and their answers, declared capacity, abandon and disconnect (the item goes to
//! another worker at once), a withdrawn item's completion refused, timeouts on a manual clock,
//! health pings, and the errors a worker gets for bad calls.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use common::calls::{assert_says, Refused};

use std::sync::Arc;
use std::time::Duration;

use common::sdk::{
    activity, activity_name, answer, error_of, first_turn, held_past_the_timeout, schedule_task,
    waits_until, DispatchServer,
};
use taskhub::executor::{Decision, ExecutorError, RemoteExecutor};
use taskhub::{Payload, Timestamp};
use taskhub_grpc::proto::{
    orchestrator_action::OrchestratorActionType as A, work_item, AbandonActivityTaskRequest,
    ActivityResponse, CreateTimerAction, GetWorkItemsRequest, OrchestratorAction,
    OrchestratorResponse,
};
use taskhub_grpc::{DispatcherSettings, INVALID_ACTION};
use taskhub_storage::SystemClock;
use tonic::Code;

fn settings() -> DispatcherSettings {
    DispatcherSettings::default()
}

async fn real_server() -> DispatchServer {
    DispatchServer::start(Arc::new(SystemClock::new()), settings()).await
}

fn done(token: &str, result: &str) -> ActivityResponse {
    ActivityResponse {
        result: Some(result.to_owned()),
        completion_token: token.to_owned(),
        ..ActivityResponse::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestration_turn_goes_out_with_its_history_and_its_actions_come_back() {
    let server = real_server().await;
    let mut w = server.worker(0, 0).await;
    let call = server.orchestrate(first_turn("o1", "Greet"));
    let item = w.expect().await;
    assert!(!item.completion_token.is_empty());
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!("{item:?}")
    };
    assert_eq!(r.instance_id, "o1");
    assert_eq!(r.execution_id.as_deref(), Some("e1"));
    assert!(r.past_events.is_empty());
    assert_eq!(r.new_events.len(), 2);
    w.answer_turn(OrchestratorResponse {
        instance_id: "o1".into(),
        actions: vec![schedule_task(0, "SayHello", "\"Tokyo\"")],
        custom_status: Some("\"started\"".into()),
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    })
    .await
    .unwrap();
    let decision = call.await.unwrap().unwrap();
    assert_eq!(
        decision.custom_status,
        Some(Payload::from_json("\"started\"").unwrap())
    );
    assert!(matches!(
        decision.decisions.as_slice(),
        [Decision::ScheduleActivity { task_id: 0, name, .. }] if name == "SayHello"
    ));
    // A second answer under the same token is refused.
    w.answer_turn(OrchestratorResponse {
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    })
    .await
    .refused(Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activity_goes_out_and_its_result_or_failure_comes_back() {
    let server = real_server().await;
    let mut w = server.worker(0, 0).await;
    let call = server.run_activity(activity("o1", "SayHello"));
    let item = w.expect().await;
    let Some(work_item::Request::ActivityRequest(a)) = &item.request else {
        panic!("{item:?}")
    };
    assert_eq!((a.name.as_str(), a.task_id), ("SayHello", 0));
    assert_eq!(a.input.as_deref(), Some("\"x\""));
    let o = a.orchestration_instance.as_ref().unwrap();
    assert_eq!(
        (o.instance_id.as_str(), o.execution_id.as_deref()),
        ("o1", Some("e1"))
    );
    w.answer_activity(done(&item.completion_token, "\"Hello x!\""))
        .await
        .unwrap();
    let out = call.await.unwrap().unwrap().unwrap();
    assert_eq!(out.as_str(), "\"Hello x!\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_gets_no_more_than_it_asked_for() {
    let server = real_server().await;
    let mut w = server.worker(5, 2).await;
    let mut calls = Vec::new();
    for name in ["a", "b", "c"] {
        let d = server.dispatcher.clone();
        calls.push(tokio::spawn(async move {
            d.run_activity(activity("o1", name)).await
        }));
    }
    let first = w.expect().await;
    let second = w.expect().await;
    w.expect_none().await;
    w.answer_activity(done(&first.completion_token, "1"))
        .await
        .unwrap();
    let third = w.expect().await;
    w.expect_none().await;
    let mut names = vec![
        activity_name(&first).to_owned(),
        activity_name(&second).to_owned(),
        activity_name(&third).to_owned(),
    ];
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
    for item in [&second, &third] {
        w.answer_activity(done(&item.completion_token, "1"))
            .await
            .unwrap();
    }
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().unwrap().as_str(), "1");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_workers_items_go_to_another_worker_at_once() {
    let server = real_server().await;
    let mut a = server.worker(5, 5).await;
    let call = server.run_activity(activity("o1", "Slow"));
    let item = a.expect().await;
    let mut b = server.worker(5, 5).await;
    b.expect_none().await;
    // Worker A goes away (its stream ends): B gets the item now, not after a timeout.
    let old_token = item.completion_token.clone();
    let mut a_client = a.client.clone();
    drop(a);
    let again = b.expect().await;
    assert_eq!(activity_name(&again), "Slow");
    assert_ne!(again.completion_token, old_token);
    // A's answer under the old token is refused; B's is taken.
    a_client
        .complete_activity_task(done(&old_token, "\"from A\""))
        .await
        .refused(Code::NotFound);
    b.answer_activity(done(&again.completion_token, "\"from B\""))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap().unwrap().as_str(), "\"from B\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_item_goes_to_another_worker_at_once() {
    let server = real_server().await;
    let mut a = server.worker(5, 5).await;
    let call = server.run_activity(activity("o1", "Hot"));
    let item = a.expect().await;
    let mut b = server.worker(5, 5).await;
    a.client
        .abandon_task_activity_work_item(AbandonActivityTaskRequest {
            completion_token: item.completion_token.clone(),
        })
        .await
        .unwrap();
    let again = b.expect().await;
    assert_eq!(activity_name(&again), "Hot");
    a.expect_none().await;
    b.answer_activity(done(&again.completion_token, "2"))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap().unwrap().as_str(), "2");
    // Abandoning it again: nobody holds that token any more.
    a.client
        .abandon_task_activity_work_item(AbandonActivityTaskRequest {
            completion_token: again.completion_token.clone(),
        })
        .await
        .refused(Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawn_item_is_refused_when_its_answer_comes_late() {
    let server = real_server().await;
    let mut w = server.worker(1, 1).await;
    // The runtime drops the future (its partition moved): the item is withdrawn.
    let call = server.orchestrate(first_turn("o1", "Greet"));
    let item = w.expect().await;
    call.abort();
    let _ = call.await;
    let e = w
        .answer_turn(OrchestratorResponse {
            completion_token: item.completion_token.clone(),
            ..OrchestratorResponse::default()
        })
        .await
        .refused(Code::NotFound);
    assert_says(&e, "withdrawn");
    // The worker has its room back: the next item comes to it at once.
    let next = server.orchestrate(first_turn("o2", "Greet"));
    let item = w.expect().await;
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!()
    };
    assert_eq!(r.instance_id, "o2");
    next.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_held_past_its_timeout_times_out_and_its_late_answer_is_refused() {
    let (server, clock) = DispatchServer::on_manual_clock(settings()).await;
    let mut w = server.worker(1, 1).await;
    let call = server.orchestrate(first_turn("o1", "Greet"));
    let item = w.expect().await;
    held_past_the_timeout(&clock, call).await;
    w.answer_turn(OrchestratorResponse {
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    })
    .await
    .refused(Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_worker_connected_a_call_answers_unavailable_after_the_wait() {
    let (server, clock) = DispatchServer::on_manual_clock(settings()).await;
    let call = server.run_activity(activity("o1", "A"));
    waits_until(&clock, &call, Duration::from_secs(30)).await;
    let e = error_of(call).await;
    assert!(matches!(e, ExecutorError::Unavailable { .. }), "{e:?}");
    // A worker that connects later does not get the withdrawn item.
    let mut w = server.worker(1, 1).await;
    w.expect_none().await;
}

/// The items waiting for a worker hold at most `waiting_bytes`: past it a call answers `Busy`
/// at once, naming the setting, and holds nothing; a worker that connects gets the ones that
/// wait, and then there is room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_waiting_budget_a_call_answers_busy_at_once() {
    let mut s = settings();
    s.waiting_bytes = 150 * 1024;
    let (server, _clock) = DispatchServer::on_manual_clock(s).await;
    let large = |i: &str| {
        activity(i, "A")
            .with_input(Payload::from_json(format!("\"{}\"", "x".repeat(100 * 1024))).unwrap())
    };
    let first = server.run_activity(large("o1"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    // 100 KiB wait; another 100 KiB would be over 150 KiB: refused at once.
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        server.dispatcher.run_activity(large("o2")),
    )
    .await
    .expect("answered at once, not after the no-worker wait")
    .unwrap_err();
    let ExecutorError::Busy { why, .. } = &e else {
        panic!("{e:?}");
    };
    assert!(why.contains("grpc_waiting_mib"), "{why}");
    // A worker takes the waiting one; the budget is free again.
    let mut w = server.worker(2, 2).await;
    let item = w.expect().await;
    assert!(!item.completion_token.is_empty());
    let second = server.run_activity(large("o3"));
    let again = w.expect().await;
    assert_ne!(again.completion_token, item.completion_token);
    first.abort();
    second.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_worker_gets_health_pings() {
    let (server, clock) = DispatchServer::on_manual_clock(settings()).await;
    let mut w = server.worker(1, 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(Duration::from_secs(30));
    w.expect_health_ping().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_answer_fails_the_orchestration_not_the_worker() {
    let server = real_server().await;
    let mut w = server.worker(1, 1).await;
    let call = server.orchestrate(first_turn("o1", "Greet"));
    let item = w.expect().await;
    w.client
        .complete_orchestrator_task(OrchestratorResponse {
            actions: vec![OrchestratorAction {
                id: 0,
                orchestrator_action_type: Some(A::CreateTimer(CreateTimerAction { fire_at: None })),
            }],
            completion_token: item.completion_token.clone(),
            ..OrchestratorResponse::default()
        })
        .await
        .expect("the worker's call succeeds");
    let decision = call.await.unwrap().unwrap();
    let [Decision::Fail { failure }] = decision.decisions.as_slice() else {
        panic!("{decision:?}")
    };
    assert_eq!(failure.error_type, INVALID_ACTION);
    assert!(
        failure
            .message
            .contains("actions[0].createTimer: fireAt: missing"),
        "{}",
        failure.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_worker_calls_get_a_status_naming_what_is_wrong() {
    let server = real_server().await;
    let mut w = server.worker(1, 1).await;
    // A negative concurrency.
    let e = w
        .client
        .get_work_items(GetWorkItemsRequest {
            max_concurrent_activity_work_items: -1,
            ..GetWorkItemsRequest::default()
        })
        .await
        .refused(Code::InvalidArgument);
    assert!(
        e.message().contains("maxConcurrentActivityWorkItems"),
        "{e:?}"
    );
    // No token.
    let e = w
        .answer_activity(ActivityResponse::default())
        .await
        .refused(Code::InvalidArgument);
    assert!(e.message().contains("completionToken"), "{e:?}");
    // An activity's token on the orchestration call.
    let call = server.run_activity(activity("o1", "A"));
    let item = w.expect().await;
    w.answer_turn(OrchestratorResponse {
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    })
    .await
    .refused(Code::FailedPrecondition);
    // The item is still out: the right call takes it.
    w.answer_activity(done(&item.completion_token, "3"))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap().unwrap().as_str(), "3");
    // An entity completion needs its token too.
    let e = w
        .answer_batch(taskhub_grpc::proto::EntityBatchResult::default())
        .await
        .refused(Code::InvalidArgument);
    assert!(e.message().contains("completionToken"), "{e:?}");
}

/// Small answers are not held back by Nagle's algorithm (the endpoint sets `TCP_NODELAY`):
/// 20 work items, each handed out and answered in turn, take far less than the 40 ms a
/// delayed ACK costs each one otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_round_trips_are_not_held_back_by_nagle() {
    let server = real_server().await;
    let mut w = server.worker(1, 1).await;
    // Warm up the connection.
    let call = server.run_activity(activity("o1", "Warm"));
    let item = w.expect().await;
    w.answer_activity(done(&item.completion_token, "0"))
        .await
        .unwrap();
    call.await.unwrap().unwrap().unwrap();
    let started = std::time::Instant::now();
    for i in 0..20 {
        let call = server.run_activity(activity("o1", "Step"));
        let item = w.expect().await;
        w.answer_activity(done(&item.completion_token, &i.to_string()))
            .await
            .unwrap();
        call.await.unwrap().unwrap().unwrap();
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(400),
        "20 round trips took {took:?} (Nagle's delay would be about 40 ms each)"
    );
}

/// The turn after `first_turn`'s: its events are past, `n` tasks scheduled after them, one
/// completed.
fn later_turn(
    first: &taskhub::executor::OrchestrationWork,
    n: u64,
) -> taskhub::executor::OrchestrationWork {
    use taskhub::{EventKind, HistoryEvent};
    let t = Timestamp::from_millis(1_700_000_000_100);
    let mut past: Vec<HistoryEvent> = first.past.iter().chain(&first.new).cloned().collect();
    past.extend((0..n).map(|task_id| {
        HistoryEvent::new(
            t,
            EventKind::TaskScheduled {
                task_id,
                name: "SayHello".into(),
                version: None,
                input: Payload::from_json(format!("\"city {task_id}\"")).unwrap(),
                attempt: 1,
                tags: Default::default(),
            },
        )
    }));
    taskhub::executor::OrchestrationWork::new(
        first.instance.clone(),
        first.execution_id.clone(),
        first.name.clone(),
        past,
        vec![HistoryEvent::new(
            t,
            EventKind::TaskCompleted {
                task_id: 0,
                result: Payload::from_json("\"hi\"").unwrap(),
            },
        )],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_carries_the_whole_history_in_order_as_converted_afresh() {
    let server = real_server().await;
    let mut w = server.worker(0, 0).await;
    let first = first_turn("o1", "Greet");
    // Three turns of one execution, the history growing (the later ones reuse what the
    // endpoint kept encoded), then the first history again (shorter: encoded anew).
    let turns = [
        later_turn(&first, 2),
        later_turn(&first, 7),
        later_turn(&first, 30),
        later_turn(&first, 1),
    ];
    for work in turns {
        let expected: Vec<_> = work
            .past
            .iter()
            .map(|e| taskhub_grpc::convert::event_to_proto(e, &work.instance))
            .collect();
        let call = server.orchestrate(work);
        let item = w.expect().await;
        let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
            panic!("{item:?}")
        };
        assert_eq!(r.past_events, expected);
        assert_eq!(r.new_events.len(), 1);
        let done = answer(&item, Vec::new());
        w.answer_turn(done).await.unwrap();
        call.await.unwrap().unwrap();
    }
}
