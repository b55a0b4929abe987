//! Rewind over gRPC with the official SDKs (issue 35): `RewindInstance`, the
//! `executionRewound` event both ways, and SDK workers replaying the history Taskhub rewound.
//!
//! * tests/python/rewind_scenarios.py: the Python SDK's own rewind tests
//!   (`tests/durabletask/test_rewind_e2e.py` of microsoft/durabletask-python, copied unchanged
//!   into tests/python/sdk_tests/, run against Taskhub instead of the SDK's in-memory backend:
//!   a failed activity, successful results kept, not found, not failed, a failed
//!   sub-orchestration, no reason, a purged sub-orchestration, twice), then Taskhub's own
//!   checks (runs counted, the rewind and its reason in the history, the refusals' codes).
//! * tests/js/rewind_scenarios.js: the same scenarios with the JavaScript SDK, and the SDK's
//!   own rewind tests that need a backend (its `test/e2e-azuremanaged/rewind.spec.ts`,
//!   translated from jest).
//! * The dispatcher's side, with a Rust gRPC client playing the SDK worker: a rewind turn goes
//!   out with `executionRewound` (and its reason) in its new events and earlier rewinds in its
//!   past, and without any to the Go and Java SDKs (whose protos predate it; the Go worker
//!   fails a turn on an event it does not know); a `rewindOrchestration` answer whose new history is the history sent less what a
//!   rewind drops is asked again without the rewind event, one that is not fails the
//!   execution naming the first event that differs (and so does a second rewind answer).
//! * The Go SDK v0.6.0 and the Java SDK 1.5.0 have no rewind call in their clients, but their
//!   workers' orchestrations are rewound all the same (by Taskhub's `RewindInstance`, here a
//!   Rust gRPC client): the worker programs of tests/go/worker_mode.go and
//!   tests/java/src/main/java/KillWorker.java run `RewindMe`, whose second activity fails its
//!   first run; rewound, it runs again, the first is not run again, and the orchestration
//!   completes, its history holding the rewind.
//!
//! The SDK scenarios run on SQLite and on Azurite. Run as `scripts/with-python-sdk.sh
//! scripts/with-js-sdk.sh scripts/with-go-sdk.sh scripts/with-java-sdk.sh
//! scripts/with-azurite.sh cargo test -p taskhub-grpc --test sdk_rewind` (scripts/test.sh
//! does).
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::script::Script;
use common::sdk::SdkServer;
use common::sdk::{
    execution, first_turn, instance, schedule_task, turn_of, Answer, DispatchServer, FakeWorker,
};
use common::serving;
use common::Backend;
use taskhub::executor::{Decision, OrchestrationDecision, OrchestrationWork};
use taskhub::{EventKind, HistoryEvent, Timestamp};
use taskhub_grpc::convert::event_to_proto;
use taskhub_grpc::proto::{
    history_event::EventType as E, orchestrator_action::OrchestratorActionType as A,
    GetWorkItemsRequest, OrchestratorAction, OrchestratorResponse, RewindOrchestrationAction,
    WorkItem,
};
use taskhub_grpc::{DispatcherSettings, INVALID_ACTION};
use taskhub_storage::SystemClock;

const COMMAND: &str = "scripts/with-azurite.sh cargo test -p taskhub-grpc --test sdk_rewind";

async fn python_sdk_rewinds(backend: Backend) {
    let python = taskhub_test_support::env::python_sdk(COMMAND);
    let scenarios = Script::python(
        &python,
        "python/rewind_scenarios.py",
        "all 11 Python SDK rewind checks passed",
    );
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}

async fn javascript_sdk_rewinds(backend: Backend) {
    let node_path = taskhub_test_support::env::js_sdk(COMMAND);
    let scenarios = Script::node(
        node_path,
        "js/rewind_scenarios.js",
        "all 9 JavaScript SDK rewind checks passed",
    );
    common::script::run_and_stop(scenarios, SdkServer::start(backend).await).await;
}

common::on_backends!(
    python_sdk_rewinds,
    python_sdk_rewinds_on_sqlite = Sqlite,
    python_sdk_rewinds_on_azurite = Azure
);

common::on_backends!(
    javascript_sdk_rewinds,
    javascript_sdk_rewinds_on_sqlite = Sqlite,
    javascript_sdk_rewinds_on_azurite = Azure
);

// -- The dispatcher's side ----------------------------------------------------------------

fn at(ms: u64, event: EventKind) -> HistoryEvent {
    HistoryEvent::new(Timestamp::from_millis(1_700_000_000_000 + ms), event)
}

fn rewound(reason: &str) -> EventKind {
    EventKind::ExecutionRewound {
        reason: Some(reason.to_owned()),
        rewound_tasks: vec![0],
    }
}

/// A second rewind's turn of `o1`: a past with the start and a first rewind, and the new
/// events Taskhub sends for a rewind.
fn rewind_turn() -> OrchestrationWork {
    let start = first_turn("o1", "Order");
    let mut past = start.new.clone();
    past.push(at(1, EventKind::OrchestratorCompleted));
    past.push(at(2, EventKind::OrchestratorStarted));
    past.push(at(3, rewound("first")));
    past.push(at(4, EventKind::OrchestratorCompleted));
    OrchestrationWork::new(
        instance("o1"),
        execution(),
        "Order".to_owned(),
        past,
        vec![
            at(5, EventKind::OrchestratorStarted),
            at(6, rewound("second")),
        ],
    )
}

fn rewind_reasons(events: &[taskhub_grpc::proto::HistoryEvent]) -> Vec<Option<String>> {
    events
        .iter()
        .filter_map(|e| match &e.event_type {
            Some(E::ExecutionRewound(r)) => Some(r.reason.clone()),
            _ => None,
        })
        .collect()
}

/// [`rewind_turn`] sent to a worker: the server, the worker, the call waiting for its answer
/// and the item the worker got. The worker declares room for one item of each kind, or, with
/// a `user_agent`, nothing (as the Go and Java SDKs).
async fn rewind_out(
    user_agent: Option<&str>,
) -> (
    DispatchServer,
    FakeWorker,
    Answer<OrchestrationDecision>,
    WorkItem,
) {
    let server =
        DispatchServer::start(Arc::new(SystemClock::new()), DispatcherSettings::default()).await;
    let mut w = match user_agent {
        Some(user_agent) => {
            serving::worker_as(server.addr, user_agent, GetWorkItemsRequest::default()).await
        }
        None => server.worker(1, 1).await,
    };
    let call = server.orchestrate(rewind_turn());
    let item = w.expect().await;
    (server, w, call, item)
}

/// Asserts that `call` failed the execution with [`INVALID_ACTION`], its message containing
/// `says`.
async fn assert_invalid_action(call: Answer<OrchestrationDecision>, says: &str) {
    let decision = call.await.unwrap().unwrap();
    let [Decision::Fail { failure }] = decision.decisions.as_slice() else {
        panic!("{decision:?}")
    };
    assert_eq!(failure.error_type, INVALID_ACTION);
    assert!(failure.message.contains(says), "{}", failure.message);
}

/// `w` answers the turn under `token` by scheduling the activity `Ship`, and `call` gets
/// that decision.
async fn answers_ship(w: &mut FakeWorker, token: &str, call: Answer<OrchestrationDecision>) {
    w.answer_turn(OrchestratorResponse {
        instance_id: "o1".into(),
        actions: vec![schedule_task(0, "Ship", "1")],
        completion_token: token.to_owned(),
        ..OrchestratorResponse::default()
    })
    .await
    .unwrap();
    let decision = call.await.unwrap().unwrap();
    assert!(
        matches!(
            decision.decisions.as_slice(),
            [Decision::ScheduleActivity { task_id: 0, name, .. }] if name == "Ship"
        ),
        "{decision:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_turn_carries_execution_rewound_with_its_reason() {
    let (_server, mut w, call, item) = rewind_out(None).await;
    let r = turn_of(&item);
    assert_eq!(r.past_events.len(), 6);
    assert_eq!(rewind_reasons(&r.past_events), [Some("first".to_owned())]);
    assert!(matches!(
        r.new_events.first().and_then(|e| e.event_type.as_ref()),
        Some(E::OrchestratorStarted(_))
    ));
    assert_eq!(rewind_reasons(&r.new_events), [Some("second".to_owned())]);
    assert_eq!(r.new_events.len(), 2);
    answers_ship(&mut w, &item.completion_token, call).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_and_java_sdks_get_rewind_turns_without_the_event_they_cannot_read() {
    for user_agent in ["grpc-java-netty/1.59.0", "grpc-go/1.56.3"] {
        let (_server, mut w, call, item) = rewind_out(Some(user_agent)).await;
        let r = turn_of(&item);
        assert!(rewind_reasons(&r.past_events).is_empty(), "{user_agent}");
        assert!(rewind_reasons(&r.new_events).is_empty(), "{user_agent}");
        // Only the rewinds are left out.
        assert_eq!(r.past_events.len(), 5, "{user_agent}");
        assert_eq!(r.new_events.len(), 1, "{user_agent}");
        // Their answers carry no token: matched by the connection and the instance.
        answers_ship(&mut w, "", call).await;
    }
}

/// What the history sent for `work` converts to, as a worker sees it.
fn sent(work: &OrchestrationWork) -> Vec<taskhub_grpc::proto::HistoryEvent> {
    work.past
        .iter()
        .chain(&work.new)
        .map(|e| event_to_proto(e, &work.instance))
        .collect()
}

fn rewind_answer(
    token: &str,
    new_history: Vec<taskhub_grpc::proto::HistoryEvent>,
) -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: "o1".into(),
        actions: vec![OrchestratorAction {
            id: -1,
            orchestrator_action_type: Some(A::RewindOrchestration(RewindOrchestrationAction {
                new_history,
            })),
        }],
        completion_token: token.to_owned(),
        ..OrchestratorResponse::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_answer_that_keeps_the_history_sent_is_asked_again_without_the_rewind() {
    let (_server, mut w, call, item) = rewind_out(None).await;
    // As the Python and JavaScript workers build it: the history sent, with a new execution
    // ID in its start (nothing else to drop: Taskhub had rewound it).
    let mut history = sent(&rewind_turn());
    if let Some(E::ExecutionStarted(s)) = &mut history[1].event_type {
        s.orchestration_instance.as_mut().unwrap().execution_id = Some("0123abcd".into());
    }
    w.answer_turn(rewind_answer(&item.completion_token, history))
        .await
        .unwrap();
    // Asked again: the same past, the new events less the rewind.
    let again = w.expect().await;
    let r = turn_of(&again);
    assert_eq!(r.past_events.len(), 6);
    assert_eq!(r.new_events.len(), 1);
    assert!(rewind_reasons(&r.new_events).is_empty());
    answers_ship(&mut w, &again.completion_token, call).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_answer_that_changes_the_history_fails_naming_the_first_event_that_differs() {
    let (_server, mut w, call, item) = rewind_out(None).await;
    // The first rewind's marker left out: a rewind keeps it.
    let mut history = sent(&rewind_turn());
    history.remove(4);
    w.answer_turn(rewind_answer(&item.completion_token, history))
        .await
        .unwrap();
    assert_invalid_action(
        call,
        "actions[0].rewindOrchestration.newHistory: event 4 is orchestratorCompleted where the \
         history sent has executionRewound (its event 4)",
    )
    .await;
    w.expect_none().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_rewind_answer_to_the_turn_asked_again_fails_the_execution() {
    let (_server, mut w, call, item) = rewind_out(None).await;
    w.answer_turn(rewind_answer(&item.completion_token, sent(&rewind_turn())))
        .await
        .unwrap();
    let again = w.expect().await;
    // The history sent the second time: the same past, the new events less the rewind.
    let mut second = rewind_turn();
    second.new.pop();
    w.answer_turn(rewind_answer(&again.completion_token, sent(&second)))
        .await
        .unwrap();
    assert_invalid_action(call, "answered with a rewind again").await;
    w.expect_none().await;
}

// -- The Go and Java SDKs' workers, rewound by Taskhub's RewindInstance ---------------------

/// A worker program of the Go or Java SDK: `program prefix... HOST:PORT NAME SLOW_SECONDS`.
struct WorkerProgram {
    program: String,
    prefix: &'static str,
    env: Vec<(&'static str, String)>,
}

fn go() -> WorkerProgram {
    WorkerProgram {
        program: taskhub_test_support::env::go_sdk(COMMAND),
        prefix: "worker",
        env: Vec::new(),
    }
}

fn java() -> WorkerProgram {
    WorkerProgram {
        program: "java".into(),
        prefix: "KillWorker",
        env: vec![("CLASSPATH", taskhub_test_support::env::java_sdk(COMMAND))],
    }
}

/// Every line the process printed until `until` was seen `n` times in all (60 s at most).
async fn lines_until(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: &mut Vec<String>,
    until: &str,
    n: usize,
) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while seen.iter().filter(|l| *l == until).count() < n {
            let line =
                lines.next_line().await.unwrap().unwrap_or_else(|| {
                    panic!("the worker ended before printing {until:?}: {seen:?}")
                });
            seen.push(line);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the worker did not print {until:?} {n} times: {seen:?}"));
}

async fn legacy_worker_rewound(sdk: WorkerProgram, backend: Backend) {
    use tokio::io::AsyncBufReadExt as _;
    let server = SdkServer::start(backend).await;
    let addr = server.addr.to_string();
    let mut command = tokio::process::Command::new(&sdk.program);
    command
        .arg(sdk.prefix)
        .arg(&addr)
        .arg("W")
        .arg("0")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in &sdk.env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    lines_until(&mut lines, &mut seen, "worker W started", 1).await;
    let mut c = server.client().await;
    common::calls::start(&mut c, "RewindMe", "legacy-rewind", None).await;
    let failed = common::calls::wait_done(&mut c, "legacy-rewind").await;
    assert_eq!(
        failed.orchestration_status,
        taskhub_grpc::proto::OrchestrationStatus::Failed as i32,
        "{failed:?}"
    );
    c.rewind_instance(taskhub_grpc::proto::RewindInstanceRequest {
        instance_id: "legacy-rewind".into(),
        reason: Some("the carrier is back".into()),
    })
    .await
    .unwrap();
    let done = common::calls::wait_done(&mut c, "legacy-rewind").await;
    assert_eq!(
        done.orchestration_status,
        taskhub_grpc::proto::OrchestrationStatus::Completed as i32,
        "{done:?}"
    );
    assert_eq!(
        serde_json::from_str::<Vec<String>>(done.output.as_deref().unwrap()).unwrap(),
        ["charge by W", "ship by W"]
    );
    // The failed activity ran twice, the one that succeeded once.
    lines_until(&mut lines, &mut seen, "fails once ran by W", 2).await;
    assert_eq!(
        seen.iter().filter(|l| *l == "charge ran by W").count(),
        1,
        "{seen:?}"
    );
    // The history (as any client reads it) holds the rewind with its reason.
    let request = taskhub_grpc::proto::StreamInstanceHistoryRequest {
        instance_id: "legacy-rewind".into(),
        execution_id: done.execution_id.clone(),
        for_work_item_processing: false,
    };
    let events = common::calls::streamed_history(&mut c, request).await;
    assert_eq!(
        rewind_reasons(&events),
        [Some("the carrier is back".to_owned())]
    );
    child.start_kill().unwrap();
    let _ = child.wait().await;
    server.stop().await;
}

common::on_backends!(
    legacy_worker_rewound(go()),
    a_go_sdk_workers_orchestration_is_rewound_on_sqlite = Sqlite,
    a_go_sdk_workers_orchestration_is_rewound_on_azurite = Azure
);

common::on_backends!(
    legacy_worker_rewound(java()),
    a_java_sdk_workers_orchestration_is_rewound_on_sqlite = Sqlite,
    a_java_sdk_workers_orchestration_is_rewound_on_azurite = Azure
);
