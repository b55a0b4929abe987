//! Query with paging, list IDs, purge (one, batch, filter, recursive), restart and history
//! over gRPC.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "test code"
)]

mod common;

use common::calls::{
    assert_names, get, start, status, streamed_history, until_status, wait_done, Client, Refused,
};
use common::{Backend, Server};
use taskhub_grpc::proto::history_event::EventType as E;
use taskhub_grpc::proto::purge_instances_request::Request as Which;
use taskhub_grpc::proto::{
    InstanceBatch, InstanceQuery, ListInstanceIdsRequest, OrchestrationStatus as S,
    PurgeInstanceFilter, PurgeInstancesRequest, PurgeInstancesResponse, QueryInstancesRequest,
    RestartInstanceRequest, StreamInstanceHistoryRequest,
};
use tonic::{Code, Status};

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    query_pages_with_a_token,
    list_ids_of_finished_instances,
    purge_one_batch_filter_and_recursive,
    restart_same_or_new_id,
    stream_history,
);

async fn query_page(c: &mut Client, q: InstanceQuery) -> (Vec<String>, Option<String>) {
    let r = c
        .query_instances(QueryInstancesRequest { query: Some(q) })
        .await
        .unwrap()
        .into_inner();
    (
        r.orchestration_state
            .into_iter()
            .map(|s| s.instance_id)
            .collect(),
        r.continuation_token,
    )
}

async fn query_pages_with_a_token(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    for i in 0..5 {
        let id = format!("q-{i}");
        start(&mut c, "Echo", &id, Some(&i.to_string())).await;
        wait_done(&mut c, &id).await;
    }
    start(&mut c, "Waiter", "other", None).await;
    until_status(&mut c, "other", S::Running).await;
    // Pages of 2 by prefix, following the token until it is absent.
    let mut seen = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let (ids, next) = query_page(
            &mut c,
            InstanceQuery {
                instance_id_prefix: Some("q-".into()),
                max_instance_count: 2,
                continuation_token: token.take(),
                fetch_inputs_and_outputs: true,
                ..InstanceQuery::default()
            },
        )
        .await;
        assert!(ids.len() <= 2);
        seen.extend(ids);
        pages += 1;
        assert!(pages < 10, "paging does not end");
        match next {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["q-0", "q-1", "q-2", "q-3", "q-4"]);
    assert!(pages >= 3);
    // Filters: status, and inputs only when asked.
    let r = c
        .query_instances(QueryInstancesRequest {
            query: Some(InstanceQuery {
                runtime_status: vec![S::Running as i32],
                ..InstanceQuery::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<_> = r
        .orchestration_state
        .iter()
        .map(|s| s.instance_id.as_str())
        .collect();
    assert_eq!(ids, ["other"]);
    assert_eq!(r.orchestration_state[0].input, None);
    // CANCELED only: nothing (Taskhub never cancels).
    let (ids, _) = query_page(
        &mut c,
        InstanceQuery {
            runtime_status: vec![S::Canceled as i32],
            ..InstanceQuery::default()
        },
    )
    .await;
    assert!(ids.is_empty());
    // Created-time window: everything was created before now + 1 h, nothing after.
    let later = prost_types::Timestamp::from(
        std::time::SystemTime::now() + std::time::Duration::from_secs(3600),
    );
    let (ids, _) = query_page(
        &mut c,
        InstanceQuery {
            created_time_from: Some(later),
            ..InstanceQuery::default()
        },
    )
    .await;
    assert!(ids.is_empty());
    let (ids, _) = query_page(
        &mut c,
        InstanceQuery {
            created_time_to: Some(later),
            max_instance_count: 100,
            ..InstanceQuery::default()
        },
    )
    .await;
    assert_eq!(ids.len(), 6);
    server.stop().await;
}

async fn list_ids_of_finished_instances(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    for i in 0..3 {
        let id = format!("done-{i}");
        start(&mut c, "Echo", &id, None).await;
        wait_done(&mut c, &id).await;
    }
    start(&mut c, "Waiter", "active", None).await;
    until_status(&mut c, "active", S::Running).await;
    let mut seen = Vec::new();
    let mut key = None;
    for _ in 0..10 {
        let r = c
            .list_instance_ids(ListInstanceIdsRequest {
                page_size: 2,
                last_instance_key: key.take(),
                ..ListInstanceIdsRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        seen.extend(r.instance_ids);
        match r.last_instance_key {
            Some(k) if !k.is_empty() => key = Some(k),
            _ => break,
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["done-0", "done-1", "done-2"],
        "finished instances only"
    );
    // Asking for Running gives nothing: only finished instances are listed.
    let r = c
        .list_instance_ids(ListInstanceIdsRequest {
            runtime_status: vec![S::Running as i32],
            ..ListInstanceIdsRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.instance_ids.is_empty());
    server.stop().await;
}

fn purge_id(id: &str, recursive: bool) -> PurgeInstancesRequest {
    PurgeInstancesRequest {
        request: Some(Which::InstanceId(id.into())),
        recursive,
        is_orchestration: true,
    }
}

/// `PurgeInstances` with `request`: what it purged, or the refusal.
async fn purge(
    c: &mut Client,
    request: PurgeInstancesRequest,
) -> Result<PurgeInstancesResponse, Status> {
    Ok(c.purge_instances(request).await?.into_inner())
}

async fn purge_one_batch_filter_and_recursive(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Echo", "p-1", None).await;
    wait_done(&mut c, "p-1").await;
    let r = purge(&mut c, purge_id("p-1", false)).await.unwrap();
    assert_eq!((r.deleted_instance_count, r.is_complete), (1, Some(true)));
    assert!(get(&mut c, "p-1").await.is_none());
    // Gone or never there: 0.
    let r = purge(&mut c, purge_id("p-1", false)).await.unwrap();
    assert_eq!(r.deleted_instance_count, 0);
    // Active: refused.
    start(&mut c, "Waiter", "p-active", None).await;
    until_status(&mut c, "p-active", S::Running).await;
    purge(&mut c, purge_id("p-active", false))
        .await
        .refused(Code::FailedPrecondition);

    // Recursive: the child goes too.
    start(&mut c, "HelloTree", "p-tree", None).await;
    wait_done(&mut c, "p-tree").await;
    let r = purge(&mut c, purge_id("p-tree", true)).await.unwrap();
    assert_eq!(r.deleted_instance_count, 2, "parent and child");
    let (left, _) = {
        let r = c
            .query_instances(QueryInstancesRequest {
                query: Some(InstanceQuery {
                    instance_id_prefix: Some("p-tree".into()),
                    ..InstanceQuery::default()
                }),
            })
            .await
            .unwrap()
            .into_inner();
        (r.orchestration_state, r.continuation_token)
    };
    assert!(left.is_empty(), "{left:?}");

    // A batch: the finished ones, active ones skipped.
    for id in ["b-1", "b-2"] {
        start(&mut c, "Echo", id, None).await;
        wait_done(&mut c, id).await;
    }
    let r = purge(
        &mut c,
        PurgeInstancesRequest {
            request: Some(Which::InstanceBatch(InstanceBatch {
                instance_ids: vec!["b-1".into(), "b-2".into(), "p-active".into(), "none".into()],
            })),
            recursive: false,
            is_orchestration: true,
        },
    )
    .await
    .unwrap();
    assert_eq!(r.deleted_instance_count, 2);

    // A filter: finished instances by status; the active one stays.
    for id in ["f-1", "f-2"] {
        start(&mut c, "Echo", id, None).await;
        wait_done(&mut c, id).await;
    }
    start(&mut c, "Fails", "f-3", None).await;
    wait_done(&mut c, "f-3").await;
    let r = purge(
        &mut c,
        PurgeInstancesRequest {
            request: Some(Which::PurgeInstanceFilter(PurgeInstanceFilter {
                runtime_status: vec![S::Completed as i32],
                ..PurgeInstanceFilter::default()
            })),
            recursive: false,
            is_orchestration: true,
        },
    )
    .await
    .unwrap();
    assert_eq!((r.deleted_instance_count, r.is_complete), (2, Some(true)));
    assert!(
        get(&mut c, "f-3").await.is_some(),
        "Failed was not asked for"
    );
    assert!(get(&mut c, "p-active").await.is_some());
    // No request: the field is named.
    let e = purge(&mut c, PurgeInstancesRequest::default())
        .await
        .refused(Code::InvalidArgument);
    assert_names(&e, "request: ");
    server.stop().await;
}

/// `RestartInstance` of `id` (under a new ID if `new_id`): the ID it started, or the refusal.
async fn restart(c: &mut Client, id: &str, new_id: bool) -> Result<String, Status> {
    let request = RestartInstanceRequest {
        instance_id: id.into(),
        restart_with_new_instance_id: new_id,
    };
    Ok(c.restart_instance(request).await?.into_inner().instance_id)
}

async fn restart_same_or_new_id(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Echo", "r-1", Some("\"again\"")).await;
    let first = wait_done(&mut c, "r-1").await;
    let id = restart(&mut c, "r-1", false).await.unwrap();
    assert_eq!(id, "r-1");
    let second = wait_done(&mut c, "r-1").await;
    assert_ne!(first.execution_id, second.execution_id);
    assert_eq!(second.output.as_deref(), Some("\"again\""));
    let new_id = restart(&mut c, "r-1", true).await.unwrap();
    assert_ne!(new_id, "r-1");
    let third = wait_done(&mut c, &new_id).await;
    assert_eq!(
        (third.name.as_str(), third.input.as_deref()),
        ("Echo", Some("\"again\""))
    );
    // Active, under a new ID (issue 34): the new instance starts, the old one runs on.
    start(&mut c, "Waiter", "r-active", Some("\"in\"")).await;
    until_status(&mut c, "r-active", S::Running).await;
    let fresh = restart(&mut c, "r-active", true).await.unwrap();
    assert_ne!(fresh, "r-active");
    let fresh = until_status(&mut c, &fresh, S::Running).await;
    assert_eq!(
        (fresh.name.as_str(), fresh.input.as_deref()),
        ("Waiter", Some("\"in\""))
    );
    assert_eq!(
        status(&get(&mut c, "r-active").await.unwrap()),
        S::Running,
        "the old instance runs on"
    );
    // Active under the same ID: FAILED_PRECONDITION; unknown: NOT_FOUND.
    restart(&mut c, "r-active", false)
        .await
        .refused(Code::FailedPrecondition);
    restart(&mut c, "nobody", false)
        .await
        .refused(Code::NotFound);
    server.stop().await;
}

async fn stream_history(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Hello", "h-1", None).await;
    let done = wait_done(&mut c, "h-1").await;
    assert_eq!(status(&done), S::Completed);
    let request = StreamInstanceHistoryRequest {
        instance_id: "h-1".into(),
        execution_id: done.execution_id.clone(),
        for_work_item_processing: false,
    };
    let events = streamed_history(&mut c, request).await;
    let kinds: Vec<_> = events
        .iter()
        .filter_map(|e| e.event_type.as_ref())
        .collect();
    // DTFx's layout: the first turn opens with OrchestratorStarted, then ExecutionStarted.
    assert!(
        matches!(kinds[0], E::OrchestratorStarted(_)),
        "{:?}",
        kinds[0]
    );
    let E::ExecutionStarted(started) = kinds[1] else {
        panic!("second event: {:?}", kinds[1])
    };
    assert_eq!(started.name, "Hello");
    assert_eq!(
        started
            .orchestration_instance
            .as_ref()
            .unwrap()
            .execution_id,
        done.execution_id
    );
    let scheduled: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.event_type, Some(E::TaskScheduled(_))))
        .map(|e| e.event_id)
        .collect();
    let completed: Vec<_> = kinds
        .iter()
        .filter_map(|k| match k {
            E::TaskCompleted(t) => Some(t.task_scheduled_id),
            _ => None,
        })
        .collect();
    assert_eq!(scheduled.len(), 3);
    assert_eq!(
        scheduled, completed,
        "results name the scheduling event's ID"
    );
    assert!(matches!(
        kinds.last(),
        Some(E::OrchestratorCompleted(_)) | Some(E::ExecutionCompleted(_))
    ));
    assert!(kinds.iter().any(
        |k| matches!(k, E::ExecutionCompleted(c) if c.orchestration_status == S::Completed as i32)
    ));
    // Another execution, or an unknown instance: NOT_FOUND.
    let e = c
        .stream_instance_history(StreamInstanceHistoryRequest {
            instance_id: "h-1".into(),
            execution_id: Some("not-this-one".into()),
            for_work_item_processing: false,
        })
        .await
        .refused(Code::NotFound);
    assert_names(&e, "executionId: ");
    c.stream_instance_history(StreamInstanceHistoryRequest {
        instance_id: "nobody".into(),
        ..StreamInstanceHistoryRequest::default()
    })
    .await
    .refused(Code::NotFound);
    server.stop().await;
}
