//! What an SDK's actions carry besides their names and inputs, end to end through the runtime
//! with a fake SDK worker: a `ScheduleTaskAction`'s tags reach the worker that runs the
//! activity (`ActivityRequest.tags`) and come back to the orchestration in the replayed
//! `taskScheduled` event (issue 34 item 6).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::calls::{start, wait_done};
use common::sdk::{FakeWorker, SdkServer};
use common::Backend;
use taskhub_grpc::proto::{
    history_event::EventType, orchestrator_action::OrchestratorActionType as A, work_item,
    ActivityResponse, CompleteOrchestrationAction, OrchestrationStatus as S, OrchestratorAction,
    OrchestratorRequest, OrchestratorResponse, ScheduleTaskAction, WorkItem,
};

fn turn_of(item: &WorkItem) -> &OrchestratorRequest {
    match &item.request {
        Some(work_item::Request::OrchestratorRequest(r)) => r,
        other => panic!("not an orchestration turn: {other:?}"),
    }
}

fn answer(item: &WorkItem, actions: Vec<OrchestratorAction>) -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: turn_of(item).instance_id.clone(),
        actions,
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_task_s_tags_reach_its_worker_and_its_replayed_history_on_memory() {
    task_tags(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_task_s_tags_reach_its_worker_and_its_replayed_history_on_sqlite() {
    task_tags(Backend::Sqlite).await;
}

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
    w.client
        .complete_orchestrator_task(answer(&first, vec![schedule]))
        .await
        .unwrap();

    let item = next(&mut w).await;
    let Some(work_item::Request::ActivityRequest(a)) = &item.request else {
        panic!("not an activity: {item:?}");
    };
    assert_eq!(a.name, "Ship");
    assert_eq!(a.tags, tags(), "{backend:?}: the activity's tags");
    w.client
        .complete_activity_task(ActivityResponse {
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
    w.client
        .complete_orchestrator_task(answer(&second, vec![done]))
        .await
        .unwrap();
    let state = wait_done(&mut c, "tagged").await;
    assert_eq!(state.output.as_deref(), Some("2"));
    server.stop().await;
}
