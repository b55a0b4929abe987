//! `DeleteTaskHub` and `CreateTaskHub{recreateIfExists}` over gRPC empty the hub in place:
//! old instances (finished, waiting, scheduled) and entities are gone, queries are empty, and
//! the serving process's worker runs new instances at once, under reused IDs too.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code"
)]

mod common;

use std::time::{Duration, SystemTime};

use common::calls::{
    self, entity_state, get, signal_add, start, status, until_state, until_status, wait_done,
    Client,
};
use common::{Backend, Server};
use taskhub_grpc::proto::{
    CreateInstanceRequest, CreateTaskHubRequest, DeleteTaskHubRequest, EntityQuery, InstanceQuery,
    OrchestrationStatus as S, QueryEntitiesRequest, QueryInstancesRequest,
};

taskhub_test_support::backend_matrix!(
    [memory, sqlite, azure]
    delete_task_hub_empties_the_hub,
    create_task_hub_recreate_empties_the_hub,
    create_task_hub_without_recreate_keeps_everything
);

/// How the hub is emptied.
#[derive(Clone, Copy)]
enum Wipe {
    Delete,
    Recreate,
}

async fn wipe(c: &mut Client, how: Wipe) {
    match how {
        Wipe::Delete => {
            c.delete_task_hub(DeleteTaskHubRequest {}).await.unwrap();
        }
        Wipe::Recreate => {
            c.create_task_hub(CreateTaskHubRequest {
                recreate_if_exists: true,
            })
            .await
            .unwrap();
        }
    }
}

/// A finished instance, one waiting for an event (its session cached by the worker), one
/// scheduled an hour from now, and an entity with state.
async fn fill(c: &mut Client) {
    start(c, "Echo", "done", Some("1")).await;
    assert_eq!(status(&wait_done(c, "done").await), S::Completed);
    start(c, "Waiter", "waiting", None).await;
    until_status(c, "waiting", S::Running).await;
    c.start_instance(CreateInstanceRequest {
        instance_id: "later".into(),
        name: "Echo".into(),
        input: Some("1".into()),
        scheduled_start_timestamp: Some(prost_types::Timestamp::from(
            SystemTime::now() + Duration::from_secs(3600),
        )),
        ..CreateInstanceRequest::default()
    })
    .await
    .unwrap();
    assert_eq!(status(&get(c, "later").await.unwrap()), S::Pending);
    signal_add(c, "@Counter@w", 5).await;
    until_state(c, "@Counter@w", "5").await;
}

async fn instance_ids(c: &mut Client) -> Vec<String> {
    c.query_instances(QueryInstancesRequest {
        query: Some(InstanceQuery::default()),
    })
    .await
    .unwrap()
    .into_inner()
    .orchestration_state
    .into_iter()
    .map(|s| s.instance_id)
    .collect()
}

async fn entity_ids(c: &mut Client) -> Vec<String> {
    c.query_entities(QueryEntitiesRequest {
        query: Some(EntityQuery::default()),
    })
    .await
    .unwrap()
    .into_inner()
    .entities
    .into_iter()
    .map(|e| e.instance_id)
    .collect()
}

async fn empties_the_hub(backend: Backend, how: Wipe) {
    let (server, mut c) = Server::with_client(backend).await;
    fill(&mut c).await;
    wipe(&mut c, how).await;

    for id in ["done", "waiting", "later"] {
        assert!(get(&mut c, id).await.is_none(), "{id} is gone");
    }
    assert_eq!(entity_state(&mut c, "@Counter@w").await, None);
    assert!(instance_ids(&mut c).await.is_empty());
    assert!(entity_ids(&mut c).await.is_empty());
    // The hub's storage is still there: its partitions are held by the same worker.
    let partitions = server.hub.store().list_partitions().await.unwrap();
    assert!(!partitions.is_empty() && partitions.iter().all(|p| p.owner.is_some()));

    // Reused IDs run as new instances with their new input, on the same worker: "waiting"
    // was a cached session of another orchestration.
    start(&mut c, "Echo", "done", Some("2")).await;
    start(&mut c, "Echo", "waiting", Some("\"fresh\"")).await;
    let done = wait_done(&mut c, "done").await;
    assert_eq!(status(&done), S::Completed, "{done:?}");
    assert_eq!(done.output.as_deref(), Some("2"));
    let waiting = wait_done(&mut c, "waiting").await;
    assert_eq!(status(&waiting), S::Completed, "{waiting:?}");
    assert_eq!(waiting.output.as_deref(), Some("\"fresh\""));
    assert_eq!(waiting.name, "Echo");
    // The entity starts over from no state.
    signal_add(&mut c, "@Counter@w", 2).await;
    until_state(&mut c, "@Counter@w", "2").await;
    let mut ids = instance_ids(&mut c).await;
    ids.sort();
    assert_eq!(ids, ["done", "waiting"]);
    server.stop().await;
}

async fn delete_task_hub_empties_the_hub(backend: Backend) {
    empties_the_hub(backend, Wipe::Delete).await;
}

async fn create_task_hub_recreate_empties_the_hub(backend: Backend) {
    empties_the_hub(backend, Wipe::Recreate).await;
}

async fn create_task_hub_without_recreate_keeps_everything(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Echo", "kept", Some("1")).await;
    wait_done(&mut c, "kept").await;
    c.create_task_hub(CreateTaskHubRequest {
        recreate_if_exists: false,
    })
    .await
    .unwrap();
    assert_eq!(
        status(&calls::get(&mut c, "kept").await.expect("kept")),
        S::Completed
    );
    server.stop().await;
}
