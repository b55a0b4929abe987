//! The client calls on instances over gRPC: start (tags, version, scheduled start, reuse
//! policy), get, waits, raise, terminate (recursive), suspend, resume.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::{Duration, SystemTime};

use common::calls::{
    assert_names, get, instance_request, start, status, until_status, wait_done, within, Client,
    Refused,
};
use common::{Backend, Server};
use taskhub_grpc::proto::{
    CreateInstanceRequest, OrchestrationIdReusePolicy, OrchestrationStatus as S, RaiseEventRequest,
    ResumeRequest, SuspendRequest, TerminateRequest,
};
use tonic::Code;

taskhub_test_support::backend_matrix!(
    [memory, sqlite]
    start_get_and_wait,
    a_scheduled_start_waits,
    reuse_policy_as_the_sdks_send_it,
    raise_event_and_its_refusals,
    terminate_recursively_or_not,
    suspend_and_resume,
    a_terminate_output_is_kept_as_sent,
    payloads_are_strings_null_and_absent_kept_apart,
);

async fn start_get_and_wait(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    // Digits beyond 64 bits travel as text, unchanged.
    let input = r#"{"n":123456789012345678901234567890,"s":"x"}"#;
    let id = c
        .start_instance(CreateInstanceRequest {
            instance_id: "echo-1".into(),
            name: "Echo".into(),
            version: Some("1.2".into()),
            input: Some(input.into()),
            tags: [("team".to_owned(), "blue".to_owned())]
                .into_iter()
                .collect(),
            ..CreateInstanceRequest::default()
        })
        .await
        .unwrap()
        .into_inner()
        .instance_id;
    assert_eq!(id, "echo-1");
    let done = wait_done(&mut c, &id).await;
    assert_eq!(status(&done), S::Completed);
    assert_eq!(done.name, "Echo");
    assert_eq!(done.version.as_deref(), Some("1.2"));
    assert_eq!(done.input.as_deref(), Some(input));
    // `Echo` returns a `serde_json::Value` (which rounds big numbers): compare as values.
    let value = |s: Option<String>| serde_json::from_str::<serde_json::Value>(&s.unwrap()).unwrap();
    assert_eq!(value(done.output.clone()), value(Some(input.into())));
    assert_eq!(value(done.custom_status.clone()), value(Some(input.into())));
    assert_eq!(done.tags.get("team").map(String::as_str), Some("blue"));
    assert!(done.failure_details.is_none());
    assert!(done.completed_timestamp.is_some() && done.execution_id.is_some());

    // Without inputs and outputs.
    let bare = c
        .get_instance(instance_request(&id, false))
        .await
        .unwrap()
        .into_inner();
    let state = bare.orchestration_state.unwrap();
    assert_eq!((state.input, state.output), (None, None));

    // Unknown: exists false, for get and both waits.
    assert!(get(&mut c, "nobody").await.is_none());
    let req = || instance_request("nobody", false);
    assert!(
        !c.wait_for_instance_start(req())
            .await
            .unwrap()
            .into_inner()
            .exists
    );
    assert!(
        !c.wait_for_instance_completion(req())
            .await
            .unwrap()
            .into_inner()
            .exists
    );

    // An instance ID is made up when none is given; a failure carries its details.
    let id = start(&mut c, "Fails", "", None).await;
    assert!(!id.is_empty());
    let failed = wait_done(&mut c, &id).await;
    assert_eq!(status(&failed), S::Failed);
    let details = failed.failure_details.unwrap();
    assert!(
        details.error_message.contains("Kah-BOOOOM!!!"),
        "{details:?}"
    );
    assert_eq!(failed.output, None);

    // A wait for completion honours the call's deadline.
    let id = start(&mut c, "Waiter", "waits", None).await;
    let started = std::time::Instant::now();
    c.wait_for_instance_completion(within(
        instance_request(&id, false),
        Duration::from_millis(400),
    ))
    .await
    .refused(Code::DeadlineExceeded);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Started: the wait for start answers Running.
    let s = c
        .wait_for_instance_start(within(instance_request(&id, false), common::STUCK))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        s.orchestration_state.unwrap().orchestration_status,
        S::Running as i32
    );
    server.stop().await;
}

async fn a_scheduled_start_waits(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    let at = SystemTime::now() + Duration::from_millis(1500);
    let at_proto = prost_types::Timestamp::from(at);
    c.start_instance(CreateInstanceRequest {
        instance_id: "later".into(),
        name: "Echo".into(),
        input: Some("1".into()),
        scheduled_start_timestamp: Some(at_proto),
        ..CreateInstanceRequest::default()
    })
    .await
    .unwrap();
    let pending = get(&mut c, "later").await.unwrap();
    assert_eq!(status(&pending), S::Pending);
    assert_eq!(
        pending.scheduled_start_timestamp.unwrap().seconds,
        at_proto.seconds
    );
    // Still pending: the wait for start runs out.
    c.wait_for_instance_start(within(
        instance_request("later", false),
        Duration::from_millis(300),
    ))
    .await
    .refused(Code::DeadlineExceeded);
    let done = wait_done(&mut c, "later").await;
    assert_eq!(status(&done), S::Completed);
    assert!(SystemTime::now() >= at, "ran before its start time");

    // The epoch (what the JavaScript SDK sends for "no time") is "now".
    c.start_instance(CreateInstanceRequest {
        instance_id: "epoch".into(),
        name: "Echo".into(),
        scheduled_start_timestamp: Some(prost_types::Timestamp::default()),
        ..CreateInstanceRequest::default()
    })
    .await
    .unwrap();
    assert_eq!(status(&wait_done(&mut c, "epoch").await), S::Completed);
    server.stop().await;
}

fn with_policy(id: &str, name: &str, replaceable: &[S]) -> CreateInstanceRequest {
    CreateInstanceRequest {
        instance_id: id.into(),
        name: name.into(),
        orchestration_id_reuse_policy: Some(OrchestrationIdReusePolicy {
            replaceable_status: replaceable.iter().map(|s| *s as i32).collect(),
            ..OrchestrationIdReusePolicy::default()
        }),
        ..CreateInstanceRequest::default()
    }
}

async fn reuse_policy_as_the_sdks_send_it(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Echo", "reuse", Some("1")).await;
    let first = wait_done(&mut c, "reuse").await;
    // No policy: an existing instance is refused.
    c.start_instance(CreateInstanceRequest {
        instance_id: "reuse".into(),
        name: "Echo".into(),
        ..CreateInstanceRequest::default()
    })
    .await
    .refused(Code::AlreadyExists);
    // Only Failed replaceable: a Completed one stays.
    c.start_instance(with_policy("reuse", "Echo", &[S::Failed]))
        .await
        .refused(Code::AlreadyExists);
    // Completed replaceable: a new execution.
    c.start_instance(with_policy("reuse", "Echo", &[S::Completed]))
        .await
        .unwrap();
    let second = wait_done(&mut c, "reuse").await;
    assert_ne!(first.execution_id, second.execution_id);

    // A running instance: refused unless Running is listed, then terminated and replaced.
    start(&mut c, "Waiter", "busy", None).await;
    let running = until_status(&mut c, "busy", S::Running).await;
    // An older client's IGNORE (the Go SDK v0.6.0: field 2, which the current protocol
    // reserves) keeps a listed instance and answers with its ID; an unlisted one is refused.
    #[expect(deprecated, reason = "an older client's action")]
    let ignore = |listed: &[S]| {
        let mut r = with_policy("busy", "Echo", listed);
        if let Some(p) = r.orchestration_id_reuse_policy.as_mut() {
            p.action = taskhub_grpc::proto::CreateOrchestrationAction::Ignore as i32;
        }
        r
    };
    let kept = c.start_instance(ignore(&[S::Running])).await.unwrap();
    assert_eq!(kept.into_inner().instance_id, "busy");
    c.start_instance(ignore(&[S::Completed]))
        .await
        .refused(Code::AlreadyExists);
    let still = until_status(&mut c, "busy", S::Running).await;
    assert_eq!(
        (still.name.as_str(), &still.execution_id),
        ("Waiter", &running.execution_id)
    );
    let finished = [S::Completed, S::Failed, S::Terminated];
    c.start_instance(with_policy("busy", "Echo", &finished))
        .await
        .refused(Code::AlreadyExists);
    let all = [
        S::Pending,
        S::Running,
        S::Suspended,
        S::Completed,
        S::Failed,
        S::Terminated,
    ];
    c.start_instance(with_policy("busy", "Echo", &all))
        .await
        .unwrap();
    let replaced = wait_done(&mut c, "busy").await;
    assert_eq!(
        (replaced.name.as_str(), status(&replaced)),
        ("Echo", S::Completed)
    );
    assert_ne!(replaced.execution_id, running.execution_id);

    // A number that is no status names the field.
    let mut bad = with_policy("x", "Echo", &[]);
    bad.orchestration_id_reuse_policy = Some(OrchestrationIdReusePolicy {
        replaceable_status: vec![42],
        ..OrchestrationIdReusePolicy::default()
    });
    let e = c.start_instance(bad).await.refused(Code::InvalidArgument);
    assert_names(&e, "orchestrationIdReusePolicy.replaceableStatus");
    server.stop().await;
}

async fn raise_event_and_its_refusals(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Waiter", "w", None).await;
    // Raised right after the start, maybe before the first turn: never lost.
    c.raise_event(RaiseEventRequest {
        instance_id: "w".into(),
        name: "Go".into(),
        input: Some(r#"{"ok":true}"#.into()),
    })
    .await
    .unwrap();
    let done = wait_done(&mut c, "w").await;
    assert_eq!(done.output.as_deref(), Some(r#"{"ok":true}"#));
    // Finished: accepted and dropped.
    c.raise_event(RaiseEventRequest {
        instance_id: "w".into(),
        name: "Go".into(),
        input: None,
    })
    .await
    .unwrap();
    c.raise_event(RaiseEventRequest {
        instance_id: "nobody".into(),
        name: "Go".into(),
        input: None,
    })
    .await
    .refused(Code::NotFound);
    let e = c
        .raise_event(RaiseEventRequest {
            instance_id: "w".into(),
            name: String::new(),
            input: None,
        })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "name: required")
    );
    server.stop().await;
}

/// The child instance a `Tree` started (found by its ID prefix), once Running.
async fn child_of(c: &mut Client, parent: &str) -> String {
    use taskhub_grpc::proto::{InstanceQuery, QueryInstancesRequest};
    let started = std::time::Instant::now();
    loop {
        let page = c
            .query_instances(QueryInstancesRequest {
                query: Some(InstanceQuery {
                    instance_id_prefix: Some(format!("{parent}:")),
                    ..InstanceQuery::default()
                }),
            })
            .await
            .unwrap()
            .into_inner();
        if let Some(s) = page.orchestration_state.first() {
            if s.orchestration_status == S::Running as i32 {
                return s.instance_id.clone();
            }
        }
        assert!(started.elapsed() < common::STUCK, "no child of {parent}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn terminate_recursively_or_not(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Tree", "deep", None).await;
    let child = child_of(&mut c, "deep").await;
    c.terminate_instance(TerminateRequest {
        instance_id: "deep".into(),
        output: Some("\"enough\"".into()),
        recursive: true,
    })
    .await
    .unwrap();
    let root = wait_done(&mut c, "deep").await;
    assert_eq!(status(&root), S::Terminated);
    assert_eq!(root.output.as_deref(), Some("\"enough\""));
    let child_state = wait_done(&mut c, &child).await;
    assert_eq!(
        status(&child_state),
        S::Terminated,
        "the child is terminated too"
    );

    // Not recursive: the child runs on.
    start(&mut c, "Tree", "shallow", None).await;
    let child = child_of(&mut c, "shallow").await;
    c.terminate_instance(TerminateRequest {
        instance_id: "shallow".into(),
        output: None,
        recursive: false,
    })
    .await
    .unwrap();
    assert_eq!(status(&wait_done(&mut c, "shallow").await), S::Terminated);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&get(&mut c, &child).await.unwrap()), S::Running);

    // Terminating a finished instance does nothing; an unknown one is NOT_FOUND.
    c.terminate_instance(TerminateRequest {
        instance_id: "shallow".into(),
        output: None,
        recursive: true,
    })
    .await
    .unwrap();
    c.terminate_instance(TerminateRequest {
        instance_id: "nobody".into(),
        output: None,
        recursive: false,
    })
    .await
    .refused(Code::NotFound);
    server.stop().await;
}

async fn suspend_and_resume(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    start(&mut c, "Waiter", "s", None).await;
    until_status(&mut c, "s", S::Running).await;
    // Resuming a running instance does nothing.
    c.resume_instance(ResumeRequest {
        instance_id: "s".into(),
        reason: None,
    })
    .await
    .unwrap();
    c.suspend_instance(SuspendRequest {
        instance_id: "s".into(),
        reason: Some("maintenance".into()),
    })
    .await
    .unwrap();
    let suspended = until_status(&mut c, "s", S::Suspended).await;
    assert_eq!(
        suspended.output, None,
        "a suspension reason is not an output"
    );
    // Suspending again does nothing; an event waits while suspended.
    c.suspend_instance(SuspendRequest {
        instance_id: "s".into(),
        reason: None,
    })
    .await
    .unwrap();
    c.raise_event(RaiseEventRequest {
        instance_id: "s".into(),
        name: "Go".into(),
        input: Some("7".into()),
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status(&get(&mut c, "s").await.unwrap()), S::Suspended);
    c.resume_instance(ResumeRequest {
        instance_id: "s".into(),
        reason: Some("done".into()),
    })
    .await
    .unwrap();
    let done = wait_done(&mut c, "s").await;
    assert_eq!(
        (status(&done), done.output.as_deref()),
        (S::Completed, Some("7"))
    );
    // Finished: suspend is refused; unknown: NOT_FOUND.
    c.suspend_instance(SuspendRequest {
        instance_id: "s".into(),
        reason: None,
    })
    .await
    .refused(Code::FailedPrecondition);
    c.resume_instance(ResumeRequest {
        instance_id: "nobody".into(),
        reason: None,
    })
    .await
    .refused(Code::NotFound);
    server.stop().await;
}

/// Issue 34: a terminate output that is an object read back JSON-encoded twice.
async fn a_terminate_output_is_kept_as_sent(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    for (id, output, read_back) in [
        ("t-object", Some("{\"a\":1}"), Some("{\"a\":1}")),
        ("t-string", Some("\"enough\""), Some("\"enough\"")),
        ("t-opaque", Some("blob:v1:c:b"), Some("blob:v1:c:b")),
        ("t-null", Some("null"), Some("null")),
        // No output: the (empty) reason, as before.
        ("t-none", None, Some("\"\"")),
    ] {
        start(&mut c, "Tree", id, None).await;
        let child = child_of(&mut c, id).await;
        c.terminate_instance(TerminateRequest {
            instance_id: id.into(),
            output: output.map(str::to_owned),
            recursive: true,
        })
        .await
        .unwrap();
        let done = wait_done(&mut c, id).await;
        assert_eq!(status(&done), S::Terminated, "{id}");
        assert_eq!(done.output.as_deref(), read_back, "{id}");
        // The child terminated with it has the same output.
        let child = wait_done(&mut c, &child).await;
        assert_eq!(child.output.as_deref(), read_back, "{id}'s child");
    }
    server.stop().await;
}

/// Issue 34: payloads are the protocol's strings. Text that is not JSON is kept as sent (a
/// Rust orchestration that reads it fails, naming it); "null" is kept as "null"; no value
/// stays no value.
async fn payloads_are_strings_null_and_absent_kept_apart(backend: Backend) {
    let (server, mut c) = Server::with_client(backend).await;
    // "null" in, "null" out (input, output and custom status).
    start(&mut c, "Echo", "p-null", Some("null")).await;
    let done = wait_done(&mut c, "p-null").await;
    assert_eq!(status(&done), S::Completed);
    assert_eq!(done.input.as_deref(), Some("null"));
    assert_eq!(done.output.as_deref(), Some("null"));
    assert_eq!(done.custom_status.as_deref(), Some("null"));
    // No input: none is read back; the Rust code read it as null and returned null.
    start(&mut c, "Echo", "p-none", None).await;
    let done = wait_done(&mut c, "p-none").await;
    assert_eq!(status(&done), S::Completed);
    assert_eq!(done.input, None);
    assert_eq!(done.output.as_deref(), Some("null"));
    // An opaque payload is accepted and kept; the Rust orchestration that reads it as a
    // value fails with an error that names it.
    let token = "blob:v1:payloads:p-opaque-input";
    start(&mut c, "Echo", "p-opaque", Some(token)).await;
    let done = wait_done(&mut c, "p-opaque").await;
    assert_eq!(status(&done), S::Failed);
    assert_eq!(done.input.as_deref(), Some(token));
    let message = done.failure_details.unwrap().error_message;
    assert!(
        message.contains("is not JSON") && message.contains(token),
        "{message}"
    );
    // An event's data the same way: "null" is a value the Waiter returns.
    start(&mut c, "Waiter", "p-event", None).await;
    until_status(&mut c, "p-event", S::Running).await;
    c.raise_event(RaiseEventRequest {
        instance_id: "p-event".into(),
        name: "Go".into(),
        input: Some("null".into()),
    })
    .await
    .unwrap();
    let done = wait_done(&mut c, "p-event").await;
    assert_eq!(status(&done), S::Completed);
    assert_eq!(done.output.as_deref(), Some("null"));
    server.stop().await;
}

/// The Java SDK 1.5.0's `restartInstance(id, false)`: a `StartInstance` under the same ID with
/// no reuse policy (its protos have none), from gRPC-Java. A finished instance is replaced, as
/// the sidecars it was built against do; a running one is refused; other clients keep the
/// current protocol's rule (no policy: refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_clients_start_without_a_policy_replaces_a_finished_instance() {
    let (server, mut c) = Server::with_client(Backend::Sqlite).await;
    let mut java = common::serving::client_as(server.addr, "grpc-java-netty/1.59.0").await;
    start(&mut c, "Echo", "again", Some("1")).await;
    let first = wait_done(&mut c, "again").await;
    let plain = CreateInstanceRequest {
        instance_id: "again".into(),
        name: "Echo".into(),
        input: Some("2".into()),
        ..CreateInstanceRequest::default()
    };
    c.start_instance(plain.clone())
        .await
        .refused(Code::AlreadyExists);
    java.start_instance(plain).await.unwrap();
    let second = wait_done(&mut c, "again").await;
    assert_ne!(first.execution_id, second.execution_id);
    assert_eq!(second.output.as_deref(), Some("2"));
    // A running instance stays.
    start(&mut c, "Waiter", "busy-j", None).await;
    until_status(&mut c, "busy-j", S::Running).await;
    java.start_instance(CreateInstanceRequest {
        instance_id: "busy-j".into(),
        name: "Echo".into(),
        ..CreateInstanceRequest::default()
    })
    .await
    .refused(Code::AlreadyExists);
    server.stop().await;
}

/// The Go SDK v0.6.0's reuse policy with its default action `ERROR` (0): an existing instance
/// is refused whatever its status, as the Go SDK's own backend does; other clients' list with
/// no action is the current protocol's replaceable statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_clients_error_action_refuses_an_existing_instance() {
    let (server, mut c) = Server::with_client(Backend::Sqlite).await;
    let mut go = common::serving::client_as(server.addr, "grpc-go/1.56.3").await;
    start(&mut c, "Echo", "go-err", Some("1")).await;
    let first = wait_done(&mut c, "go-err").await;
    go.start_instance(with_policy("go-err", "Echo", &[S::Completed]))
        .await
        .refused(Code::AlreadyExists);
    assert_eq!(
        wait_done(&mut c, "go-err").await.execution_id,
        first.execution_id
    );
    // The same list from another client replaces it.
    c.start_instance(with_policy("go-err", "Echo", &[S::Completed]))
        .await
        .unwrap();
    server.stop().await;
}
