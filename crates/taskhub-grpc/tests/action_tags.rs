//! What an SDK's actions carry besides their names and inputs, end to end through the runtime
//! with a fake SDK worker: a `ScheduleTaskAction`'s tags reach the worker that runs the
//! activity (`ActivityRequest.tags`) and come back to the orchestration in the replayed
//! `taskScheduled` event; a `CreateSubOrchestrationAction`'s tags become the child's
//! instance tags (its status over gRPC, its `executionStarted`), checked against the hub's
//! tag caps as a client's start's are; an action's `parentTraceContext` is the trace the
//! activity or the child joins (issue 34 item 6).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::calls::{start, until_status, wait_done};
use common::sdk::{answer, turn_of, FakeWorker, SdkServer};
use common::Backend;
use taskhub_grpc::proto::{
    history_event::EventType, orchestrator_action::OrchestratorActionType as A, work_item,
    ActivityResponse, CompleteOrchestrationAction, CreateSubOrchestrationAction,
    OrchestrationStatus as S, OrchestratorAction, ScheduleTaskAction, TraceContext, WorkItem,
};

async fn next(w: &mut FakeWorker) -> WorkItem {
    w.next(Duration::from_secs(60))
        .await
        .expect("a work item within 60 s")
}

fn tags() -> HashMap<String, String> {
    [
        ("team".to_owned(), "ops".to_owned()),
        ("tier".to_owned(), "gold".to_owned()),
    ]
    .into()
}

common::on_backends!(
    task_tags,
    a_scheduled_task_s_tags_reach_its_worker_and_its_replayed_history_on_memory = Memory,
    a_scheduled_task_s_tags_reach_its_worker_and_its_replayed_history_on_sqlite = Sqlite
);

async fn task_tags(backend: Backend) {
    let server = SdkServer::start(backend).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Tagger", "tagged", None).await;
    let first = next(&mut w).await;
    let schedule = OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            input: Some("1".into()),
            tags: tags(),
            ..ScheduleTaskAction::default()
        })),
    };
    w.answer_turn(answer(&first, vec![schedule])).await.unwrap();

    let item = next(&mut w).await;
    let Some(work_item::Request::ActivityRequest(a)) = &item.request else {
        panic!("not an activity: {item:?}");
    };
    assert_eq!(a.name, "Ship");
    assert_eq!(a.tags, tags(), "{backend:?}: the activity's tags");
    w.answer_activity(ActivityResponse {
        instance_id: "tagged".into(),
        task_id: a.task_id,
        result: Some("2".into()),
        completion_token: item.completion_token.clone(),
        ..ActivityResponse::default()
    })
    .await
    .unwrap();

    // The next turn replays the task as scheduled, tags and all.
    let second = next(&mut w).await;
    let scheduled: Vec<_> = turn_of(&second)
        .past_events
        .iter()
        .filter_map(|e| match &e.event_type {
            Some(EventType::TaskScheduled(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let [scheduled] = scheduled.as_slice() else {
        panic!("one taskScheduled: {second:?}");
    };
    assert_eq!(scheduled.tags, tags(), "{backend:?}: the replayed tags");
    let done = OrchestratorAction {
        id: 1,
        orchestrator_action_type: Some(A::CompleteOrchestration(CompleteOrchestrationAction {
            orchestration_status: S::Completed.into(),
            result: Some("2".into()),
            ..CompleteOrchestrationAction::default()
        })),
    };
    w.answer_turn(answer(&second, vec![done])).await.unwrap();
    let state = wait_done(&mut c, "tagged").await;
    assert_eq!(state.output.as_deref(), Some("2"));
    server.stop().await;
}

fn sub_orchestration(child: &str, tags: HashMap<String, String>) -> OrchestratorAction {
    OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::CreateSubOrchestration(CreateSubOrchestrationAction {
            instance_id: child.to_owned(),
            name: "Child".into(),
            tags,
            ..CreateSubOrchestrationAction::default()
        })),
    }
}

common::on_backends!(
    child_tags,
    a_sub_orchestration_s_tags_are_the_child_s_tags_on_memory = Memory,
    a_sub_orchestration_s_tags_are_the_child_s_tags_on_sqlite = Sqlite
);

async fn child_tags(backend: Backend) {
    let server = SdkServer::start(backend).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Parent", "parent", None).await;
    let first = next(&mut w).await;
    w.answer_turn(answer(&first, vec![sub_orchestration("kid", tags())]))
        .await
        .unwrap();

    // The child's first turn: its start carries the tags, as a client's start's would.
    let turn = next(&mut w).await;
    let r = turn_of(&turn);
    assert_eq!(r.instance_id, "kid");
    let started = r
        .new_events
        .iter()
        .chain(&r.past_events)
        .find_map(|e| match &e.event_type {
            Some(EventType::ExecutionStarted(s)) => Some(s.clone()),
            _ => None,
        })
        .expect("an executionStarted");
    assert_eq!(started.tags, tags(), "{backend:?}: the child's start");
    w.answer_turn(answer(&turn, Vec::new())).await.unwrap();
    let state = until_status(&mut c, "kid", S::Running).await;
    assert_eq!(state.tags, tags(), "{backend:?}: the child's status");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_over_the_hub_s_caps_fail_the_orchestration_and_start_nothing() {
    let server = SdkServer::start(Backend::Memory).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Parent", "greedy", None).await;
    let first = next(&mut w).await;
    // One more than the default max_tags (32).
    let many: HashMap<String, String> = (0..33).map(|n| (format!("k{n:02}"), "v".into())).collect();
    w.answer_turn(answer(&first, vec![sub_orchestration("nope", many)]))
        .await
        .unwrap();
    let state = wait_done(&mut c, "greedy").await;
    assert_eq!(state.orchestration_status, S::Failed as i32);
    let failure = state.failure_details.expect("a failure");
    assert_eq!(failure.error_type, "InvalidTags");
    assert!(
        failure.error_message.contains("sub-orchestration 'Child'")
            && failure.error_message.contains("max_tags"),
        "{}",
        failure.error_message
    );
    w.expect_none().await;
    assert!(common::calls::get(&mut c, "nope").await.is_none());
    server.stop().await;
}

/// The SDK's span that took an action (its trace ID and span ID).
const SDK_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SDK_SPAN: &str = "00f067aa0ba902b7";

fn sdk_context() -> Option<TraceContext> {
    Some(TraceContext {
        trace_parent: format!("00-{SDK_TRACE}-{SDK_SPAN}-01"),
        ..TraceContext::default()
    })
}

/// The trace ID of a `traceparent`.
fn trace_id(tp: &str) -> &str {
    tp.split('-').nth(1).unwrap_or_default()
}

fn activity_trace(item: &WorkItem) -> String {
    let Some(work_item::Request::ActivityRequest(a)) = &item.request else {
        panic!("not an activity: {item:?}");
    };
    a.parent_trace_context
        .as_ref()
        .expect("a parentTraceContext")
        .trace_parent
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_s_parent_trace_context_is_the_trace_its_activity_and_child_join() {
    let server = SdkServer::start(Backend::Memory).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Parent", "traced", None).await;
    let first = next(&mut w).await;
    let task = OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            parent_trace_context: sdk_context(),
            ..ScheduleTaskAction::default()
        })),
    };
    let child = OrchestratorAction {
        id: 1,
        orchestrator_action_type: Some(A::CreateSubOrchestration(CreateSubOrchestrationAction {
            instance_id: "traced-kid".into(),
            name: "Child".into(),
            parent_trace_context: sdk_context(),
            ..CreateSubOrchestrationAction::default()
        })),
    };
    w.answer_turn(answer(&first, vec![task, child]))
        .await
        .unwrap();

    // The activity and the child's turn, in either order.
    let mut seen_activity = false;
    let mut kid_turn = None;
    while !seen_activity || kid_turn.is_none() {
        let item = next(&mut w).await;
        match &item.request {
            Some(work_item::Request::ActivityRequest(_)) => {
                let tp = activity_trace(&item);
                assert_eq!(
                    trace_id(&tp),
                    SDK_TRACE,
                    "the activity joins the SDK's trace"
                );
                assert!(
                    !tp.contains(SDK_SPAN),
                    "under Taskhub's activity span: {tp}"
                );
                seen_activity = true;
            }
            Some(work_item::Request::OrchestratorRequest(r)) if r.instance_id == "traced-kid" => {
                kid_turn = Some(item);
            }
            other => panic!("unexpected: {other:?}"),
        }
    }
    // The child's own activity (scheduled with no context) is in the SDK's trace too.
    let kid_turn = kid_turn.unwrap();
    let kid_task = OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Pack".into(),
            ..ScheduleTaskAction::default()
        })),
    };
    w.answer_turn(answer(&kid_turn, vec![kid_task]))
        .await
        .unwrap();
    let item = next(&mut w).await;
    assert_eq!(
        trace_id(&activity_trace(&item)),
        SDK_TRACE,
        "the child's trace"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_parent_trace_context_an_activity_joins_the_turn_s_trace() {
    let server = SdkServer::start(Backend::Memory).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Parent", "untraced", None).await;
    let first = next(&mut w).await;
    let bad = OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            // Not a traceparent: ignored.
            parent_trace_context: Some(TraceContext {
                trace_parent: "junk".into(),
                ..TraceContext::default()
            }),
            ..ScheduleTaskAction::default()
        })),
    };
    w.answer_turn(answer(&first, vec![bad])).await.unwrap();
    let item = next(&mut w).await;
    let tp = activity_trace(&item);
    assert_eq!(tp.split('-').count(), 4, "{tp}");
    assert_ne!(trace_id(&tp), SDK_TRACE);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestration_trace_context_is_echoed_in_the_execution_s_next_turn() {
    let server = SdkServer::start(Backend::Memory).await;
    let mut w = server.worker(10, 10).await;
    let mut c = server.client().await;

    start(&mut c, "Spanned", "spanned", None).await;
    let first = next(&mut w).await;
    assert_eq!(turn_of(&first).orchestration_trace_context, None);
    let context = taskhub_grpc::proto::OrchestrationTraceContext {
        span_id: Some(SDK_SPAN.into()),
        span_start_time: Some(prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 0,
        }),
    };
    let task = OrchestratorAction {
        id: 0,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            ..ScheduleTaskAction::default()
        })),
    };
    let mut r = answer(&first, vec![task]);
    r.orchestration_trace_context = Some(context.clone());
    w.answer_turn(r).await.unwrap();

    let item = next(&mut w).await;
    let Some(work_item::Request::ActivityRequest(a)) = &item.request else {
        panic!("not an activity: {item:?}");
    };
    w.answer_activity(ActivityResponse {
        instance_id: "spanned".into(),
        task_id: a.task_id,
        result: Some("1".into()),
        completion_token: item.completion_token.clone(),
        ..ActivityResponse::default()
    })
    .await
    .unwrap();
    // The next turn of the execution carries the SDK's span back.
    let second = next(&mut w).await;
    assert_eq!(
        turn_of(&second).orchestration_trace_context,
        Some(context),
        "echoed"
    );
    server.stop().await;
}
