//! Entities, the calls Taskhub does not serve (worker calls) and rewind's refusals, bad
//! requests, and the token over gRPC.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "test code"
)]

mod common;

use std::time::Duration;

use common::calls::{
    assert_names, assert_says, entity, instance_request, signal_add, until_state, Refused,
};
use common::{Backend, Server};
use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::{
    CleanEntityStorageRequest, CreateInstanceRequest, CreateTaskHubRequest, DeleteTaskHubRequest,
    EntityQuery, GetWorkItemsRequest, QueryEntitiesRequest, RewindInstanceRequest,
    SignalEntityRequest,
};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request};

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    entities_signal_get_query_clean,
    unserved_calls_say_why,
    bad_requests_name_the_field,
    a_token_is_required_when_set
);

async fn entities_signal_get_query_clean(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    let missing = entity(&mut c, "@Counter@none", true).await;
    assert!(!missing.exists && missing.entity.is_none());
    for (key, n) in [("a", 5), ("a", 2), ("b", 1)] {
        signal_add(&mut c, &format!("@Counter@{key}"), n).await;
    }
    until_state(&mut c, "@Counter@a", "7").await;
    until_state(&mut c, "@Counter@b", "1").await;
    // A signal for later.
    let at = std::time::SystemTime::now() + Duration::from_millis(800);
    c.signal_entity(SignalEntityRequest {
        instance_id: "@Counter@b".into(),
        name: "add".into(),
        input: Some("10".into()),
        scheduled_time: Some(prost_types::Timestamp::from(at)),
        ..SignalEntityRequest::default()
    })
    .await
    .unwrap();
    until_state(&mut c, "@Counter@b", "11").await;
    assert!(
        std::time::SystemTime::now() >= at,
        "a scheduled signal ran early"
    );
    // A scheduled signal takes any payload an SDK sends (issue 34): text that is not JSON (a
    // large-payload token) and none at all are accepted as they are.
    for input in [Some("blob:v1:payloads:signal"), None] {
        c.signal_entity(SignalEntityRequest {
            instance_id: "@Counter@c".into(),
            name: "add".into(),
            input: input.map(str::to_owned),
            scheduled_time: Some(prost_types::Timestamp::from(at + Duration::from_secs(60))),
            ..SignalEntityRequest::default()
        })
        .await
        .unwrap();
    }

    let without_state = entity(&mut c, "@Counter@a", false).await.entity.unwrap();
    assert_eq!(without_state.serialized_state, None);
    assert!(without_state.last_modified_time.is_some());

    // Query by a whole name, by a partial one, paged.
    let query = |prefix: &str, page: Option<i32>, token: Option<String>| QueryEntitiesRequest {
        query: Some(EntityQuery {
            instance_id_starts_with: Some(prefix.into()),
            include_state: true,
            page_size: page,
            continuation_token: token,
            ..EntityQuery::default()
        }),
    };
    let r = c
        .query_entities(query("@Counter@", None, None))
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<_> = r.entities.iter().map(|e| e.instance_id.as_str()).collect();
    assert_eq!(ids, ["@Counter@a", "@Counter@b"]);
    assert_eq!(r.entities[0].serialized_state.as_deref(), Some("7"));
    let r = c
        .query_entities(query("@Count", None, None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.entities.len(), 2);
    let r = c
        .query_entities(query("@Other", None, None))
        .await
        .unwrap()
        .into_inner();
    assert!(r.entities.is_empty());
    let mut all = Vec::new();
    let mut token = None;
    for _ in 0..5 {
        let r = c
            .query_entities(query("@Counter@", Some(1), token.take()))
            .await
            .unwrap()
            .into_inner();
        all.extend(r.entities.into_iter().map(|e| e.instance_id));
        match r.continuation_token {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    assert_eq!(all, ["@Counter@a", "@Counter@b"]);

    // Clean: nothing is empty or orphaned here.
    let r = c
        .clean_entity_storage(CleanEntityStorageRequest {
            continuation_token: None,
            remove_empty_entities: true,
            release_orphaned_locks: true,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (r.empty_entities_removed, r.orphaned_locks_released),
        (0, 0)
    );
    assert_eq!(r.continuation_token, None);

    // An ID that is no entity ID names the field.
    let e = c
        .signal_entity(SignalEntityRequest {
            instance_id: "Counter".into(),
            name: "add".into(),
            ..SignalEntityRequest::default()
        })
        .await
        .refused(Code::InvalidArgument);
    assert_names(&e, "instanceId: ");
    let e = c
        .query_entities(query("Counter", None, None))
        .await
        .unwrap_err();
    assert_names(&e, "query.instanceIdStartsWith: ");
    server.stop().await;
}

async fn unserved_calls_say_why(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    c.hello(()).await.unwrap();
    // Rewind is served (tests/sdk_rewind.rs): an unknown instance is NOT_FOUND, no ID is
    // INVALID_ARGUMENT naming the field.
    let e = c
        .rewind_instance(RewindInstanceRequest {
            instance_id: "x".into(),
            reason: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{}", e.message());
    let e = c
        .rewind_instance(RewindInstanceRequest {
            instance_id: String::new(),
            reason: Some("why".into()),
        })
        .await
        .refused(Code::InvalidArgument);
    assert_names(&e, "instanceId: ");
    let e = c
        .get_work_items(GetWorkItemsRequest::default())
        .await
        .refused(Code::Unimplemented);
    assert_says(&e, "SDK workers are not served by this endpoint");
    server.stop().await;
}

async fn bad_requests_name_the_field(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    let start = |name: &str, id: &str, input: Option<&str>| CreateInstanceRequest {
        instance_id: id.into(),
        name: name.into(),
        input: input.map(str::to_owned),
        ..CreateInstanceRequest::default()
    };
    let cases = [
        (start("", "x", None), "name: required"),
        (start("Echo", "a/b", None), "instanceId: "),
        (start("Echo", "@Counter@x", None), "instanceId: "),
    ];
    for (request, prefix) in cases {
        let e = c
            .start_instance(request)
            .await
            .refused(Code::InvalidArgument);
        assert!(
            e.message().starts_with(prefix),
            "{} (wanted {prefix})",
            e.message()
        );
    }
    let mut tagged = start("Echo", "x", None);
    tagged.tags.insert("bad key!".into(), "v".into());
    c.start_instance(tagged)
        .await
        .refused(Code::InvalidArgument);
    let mut traced = start("Echo", "x", None);
    traced.parent_trace_context = Some(taskhub_grpc::proto::TraceContext {
        trace_parent: "nope".into(),
        ..Default::default()
    });
    let e = c.start_instance(traced).await.unwrap_err();
    assert_names(&e, "parentTraceContext.traceParent: ");
    let e = c
        .get_instance(instance_request("", false))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "instanceId: required")
    );
    // Nothing was started by the refused requests.
    assert!(common::calls::get(&mut c, "x").await.is_none());
    server.stop().await;
}

async fn a_token_is_required_when_set(backend: Backend) {
    let server = Server::start_with(backend, Some("s3cret")).await;
    // A refused call's connection is closed once it has its answer, so each refused call
    // below comes on a connection of its own.
    server
        .client()
        .await
        .hello(())
        .await
        .refused(Code::Unauthenticated);
    server
        .client()
        .await
        .get_instance(instance_request("x", false))
        .await
        .refused(Code::Unauthenticated);
    // The calls that empty the hub are refused like every other.
    let e = server
        .client()
        .await
        .delete_task_hub(DeleteTaskHubRequest {})
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "DeleteTaskHub: {e:?}");
    let e = server
        .client()
        .await
        .create_task_hub(CreateTaskHubRequest {
            recreate_if_exists: true,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "CreateTaskHub: {e:?}");
    let channel = tonic::transport::Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    for (token, ok) in [("Bearer s3cret", true), ("Bearer wrong", false)] {
        let value: MetadataValue<_> = token.parse().unwrap();
        let mut c = TaskHubSidecarServiceClient::with_interceptor(
            channel.clone(),
            move |mut r: Request<()>| {
                r.metadata_mut().insert("authorization", value.clone());
                Ok(r)
            },
        );
        let got = c.hello(()).await;
        assert_eq!(got.is_ok(), ok, "{token}: {got:?}");
    }
    server.stop().await;
}
