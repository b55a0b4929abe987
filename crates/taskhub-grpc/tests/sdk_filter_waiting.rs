//! Work that no connected SDK worker's work-item filters take waits, Pending, for one that
//! does (`sdk_filters.rs`); here it is *shown*: the dispatcher counts it by kind with the names
//! waited for (`Dispatcher::unmatched`, what the HTTP API's stats, partitions page and scale
//! recommendation read), and the scale recommendation, reading it, keeps the workers and says
//! the work waits for a worker with matching filters, not for capacity. A real Taskhub worker
//! (the runtime, an empty registry) with a filtered worker stream that takes orchestration
//! `Wanted` only, as the .NET worker's `UseWorkItemFilters` sends its registry's names.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::{Duration, Instant};

use common::calls::{filtered, get, orchestration_filters, start, Client};
use common::sdk::{schedule_task, FakeWorker, SdkServer};
use common::serving::work_items;
use common::Backend;
use taskhub::admin::{ScaleAction, UnmatchedName, UnmatchedWork, WorkKind};
use taskhub::EntityId;
use taskhub_grpc::proto::{
    work_item, CreateInstanceRequest, OrchestrationStatus, OrchestratorResponse,
};

/// A worker stream whose filters take orchestration `Wanted` and nothing else.
async fn wanted_only(server: &SdkServer) -> FakeWorker {
    let filters = orchestration_filters(&[("Wanted", &[])]);
    work_items(server.client().await, filtered(filters)).await
}

/// Polls the dispatcher's report until `done` holds (20 s at most).
async fn report_until(server: &SdkServer, done: impl Fn(&UnmatchedWork) -> bool) -> UnmatchedWork {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = server.dispatcher.unmatched();
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "never reached: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn name(kind: WorkKind, name: &str, version: Option<&str>, items: usize) -> UnmatchedName {
    UnmatchedName {
        kind,
        name: name.into(),
        version: version.map(str::to_owned),
        items,
    }
}

async fn status(c: &mut Client, id: &str) -> i32 {
    get(c, id).await.unwrap().orchestration_status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_no_filter_takes_is_counted_by_kind_and_name_and_scale_does_not_scale_in_for_it() {
    let server = SdkServer::start(Backend::Sqlite).await;
    let mut w = wanted_only(&server).await;
    let mut c = server.client().await;

    // Nothing waits yet; one worker is connected.
    let empty = server.dispatcher.unmatched();
    assert_eq!((empty.workers, empty.total()), (1, 0), "{empty:?}");

    // `Wanted` goes to the worker, which schedules activity `Charge` (its filters list no
    // activity); two `Unwanted` starts (one at version 2) and a signal to entity `ghost`
    // find no worker whose filters take them.
    start(&mut c, "Wanted", "w1", None).await;
    let item = w.expect().await;
    let Some(work_item::Request::OrchestratorRequest(turn)) = &item.request else {
        panic!("not a turn: {item:?}")
    };
    assert_eq!(turn.instance_id, "w1");
    w.answer_turn(OrchestratorResponse {
        instance_id: "w1".into(),
        actions: vec![schedule_task(0, "Charge", "5")],
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    })
    .await
    .unwrap();
    start(&mut c, "Unwanted", "u1", None).await;
    c.start_instance(CreateInstanceRequest {
        instance_id: "u2".into(),
        name: "Unwanted".into(),
        version: Some("2".into()),
        ..CreateInstanceRequest::default()
    })
    .await
    .unwrap();
    server
        .hub
        .client()
        .signal_entity(&EntityId::new("ghost", "k").unwrap(), "add", &1)
        .await
        .unwrap();

    let report = report_until(&server, |r| {
        (r.orchestrations, r.activities, r.entities) == (2, 1, 1)
    })
    .await;
    assert_eq!(report.workers, 1);
    assert_eq!(report.omitted, 0);
    let mut names = report.names.clone();
    names.sort_by(|a, b| (a.kind, &a.name, &a.version).cmp(&(b.kind, &b.name, &b.version)));
    assert_eq!(
        names,
        [
            name(WorkKind::Orchestration, "Unwanted", None, 1),
            name(WorkKind::Orchestration, "Unwanted", Some("2"), 1),
            name(WorkKind::Activity, "Charge", None, 1),
            name(WorkKind::Entity, "ghost", None, 1),
        ]
    );
    // They wait Pending (the orchestrations never started), not failed; the worker got none.
    assert_eq!(
        status(&mut c, "u1").await,
        OrchestrationStatus::Pending as i32
    );
    assert_eq!(
        status(&mut c, "u2").await,
        OrchestrationStatus::Pending as i32
    );
    assert_eq!(
        status(&mut c, "w1").await,
        OrchestrationStatus::Running as i32
    );
    w.expect_none().await;

    // The scale recommendation of this process sees them: no scaling in, and why.
    let source = server.dispatcher.unmatched_source();
    let admin = server.hub.admin();
    let rec = admin
        .scale_seeing(2, Duration::from_millis(100), Some(&source))
        .await
        .unwrap();
    assert_ne!(rec.action, ScaleAction::ScaleIn, "{rec:?}");
    assert!(rec.recommended_workers >= rec.current_workers, "{rec:?}");
    assert!(
        rec.reason
            .contains("2 orchestration(s), 1 activity(ies) and 1 entity batch(es)")
            && rec
                .reason
                .contains("orchestration 'Unwanted' version '2' (1)")
            && rec.reason.contains("activity 'Charge' (1)")
            && rec.reason.contains("entity 'ghost' (1)")
            && rec.reason.contains("not for capacity"),
        "{}",
        rec.reason
    );
    assert_eq!(rec.unmatched.as_ref().map(UnmatchedWork::total), Some(4));
    // Another process (no dispatcher) cannot know, and says so with `None`.
    let blind = admin.scale(1, Duration::ZERO).await.unwrap();
    assert_eq!(blind.unmatched, None);

    // A worker without filters takes everything: nothing is left waiting, and it gets the
    // four items.
    let mut any = server.worker(10, 10).await;
    let mut kinds = Vec::new();
    for _ in 0..4 {
        let item = any.expect().await;
        kinds.push(match item.request {
            Some(work_item::Request::OrchestratorRequest(r)) => r.instance_id,
            Some(work_item::Request::ActivityRequest(a)) => a.name,
            Some(work_item::Request::EntityRequestV2(e)) => e.instance_id,
            other => panic!("{other:?}"),
        });
    }
    kinds.sort();
    assert_eq!(kinds, ["@ghost@k", "Charge", "u1", "u2"]);
    let after = server.dispatcher.unmatched();
    assert_eq!((after.workers, after.total()), (2, 0), "{after:?}");
    assert!(after.names.is_empty());
    let rec = admin
        .scale_seeing(1, Duration::ZERO, Some(&source))
        .await
        .unwrap();
    assert!(!rec.reason.contains("not for capacity"), "{}", rec.reason);
    server.stop().await;
}
