//! Work-item filters (`GetWorkItemsRequest.workItemFilters`, as the Python SDK's
//! `use_work_item_filters`, the JavaScript SDK's and .NET's `UseWorkItemFilters` send them):
//! each worker gets only the orchestrations, activities and entities its filters name (a
//! listed version, or any when none is listed); an item no connected worker takes waits, and
//! answers `Unavailable` (given back uncounted by the runtime) after `no_worker_wait`, never a
//! failure; items behind it still go out.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::calls::{filtered, orchestration_filters as orchestrations};
use common::sdk::{activity, error_of, first_turn, DispatchServer, FakeWorker};
use common::serving::work_items;
use taskhub::executor::{ExecutorError, RemoteExecutor};
use taskhub_grpc::proto::{work_item, ActivityFilter, ActivityResponse, WorkItem, WorkItemFilters};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;

async fn filtered_worker(server: &DispatchServer, filters: WorkItemFilters) -> FakeWorker {
    work_items(server.client().await, filtered(filters)).await
}

fn orchestration_name(item: &WorkItem) -> String {
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!("{item:?}")
    };
    r.new_events
        .iter()
        .find_map(|e| match &e.event_type {
            Some(taskhub_grpc::proto::history_event::EventType::ExecutionStarted(s)) => {
                Some(s.name.clone())
            }
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_worker_gets_only_what_its_filters_name() {
    let server =
        DispatchServer::start(Arc::new(SystemClock::new()), DispatcherSettings::default()).await;
    let mut greeter = filtered_worker(&server, orchestrations(&[("Greet", &[])])).await;
    let mut payer = filtered_worker(&server, orchestrations(&[("Pay", &[])])).await;
    let mut calls = Vec::new();
    for (id, name) in [
        ("p1", "Pay"),
        ("g1", "Greet"),
        ("p2", "Pay"),
        ("g2", "Greet"),
    ] {
        let d = server.dispatcher.clone();
        calls.push(tokio::spawn(async move {
            d.orchestrate(first_turn(id, name)).await
        }));
    }
    for _ in 0..2 {
        assert_eq!(orchestration_name(&greeter.expect().await), "Greet");
        assert_eq!(orchestration_name(&payer.expect().await), "Pay");
    }
    greeter.expect_none().await;
    payer.expect_none().await;
    // Neither takes activities: their filters list none.
    let act = server.run_activity(activity("p1", "Charge"));
    greeter.expect_none().await;
    payer.expect_none().await;
    // A worker whose filters name it takes it.
    let mut charger = filtered_worker(
        &server,
        WorkItemFilters {
            activities: vec![ActivityFilter {
                name: "Charge".into(),
                versions: vec![],
            }],
            ..WorkItemFilters::default()
        },
    )
    .await;
    let item = charger.expect().await;
    charger
        .client
        .complete_activity_task(ActivityResponse {
            result: Some("1".into()),
            completion_token: item.completion_token,
            ..ActivityResponse::default()
        })
        .await
        .unwrap();
    assert!(act.await.unwrap().unwrap().is_ok());
    for c in calls {
        c.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_nobody_takes_waits_without_holding_back_the_ones_behind_it_and_is_never_failed() {
    let (server, clock) = DispatchServer::on_manual_clock(DispatcherSettings::default()).await;
    let mut w = filtered_worker(&server, orchestrations(&[("Greet", &["2"])])).await;
    // First in line: an orchestration no worker takes; behind it, one this worker takes.
    let unmatched = server.orchestrate(first_turn("x1", "Other"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let matched = server.orchestrate(first_turn("g1", "Greet"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    // `first_turn` starts version-less executions: version "2" only is not taken either.
    w.expect_none().await;
    assert!(!matched.is_finished());
    // After the no-worker wait both answer Unavailable: the runtime gives them back
    // uncounted and asks again, never failing them.
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(Duration::from_secs(31));
    for call in [unmatched, matched] {
        let e = error_of(call).await;
        assert!(matches!(e, ExecutorError::Unavailable { .. }), "{e:?}");
    }
    // A worker that takes any version of Greet gets the next one, past an unmatched one.
    let mut any = filtered_worker(&server, orchestrations(&[("Greet", &[])])).await;
    let unmatched = server.orchestrate(first_turn("x2", "Other"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _matched = server.orchestrate(first_turn("g2", "Greet"));
    assert_eq!(orchestration_name(&any.expect().await), "Greet");
    w.expect_none().await;
    unmatched.abort();
}
