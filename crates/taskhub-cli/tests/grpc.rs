//! `taskhub worker --grpc` and `taskhub serve --grpc`: the Durable Task gRPC endpoint from the
//! binary, with the HTTP API's address rule.

mod common;

use std::process::Child;

use common::calls::{get, start};
use common::listening::{interrupt as stop, on_db, spawn_listening, GRPC};
use common::sidecar::{completed_within, connect, Sidecar as Client};
use common::{run, TempDir};
use taskhub_grpc::proto::{DeleteTaskHubRequest, OrchestrationState, OrchestrationStatus};

/// Starts the command; returns it with the address of its "Durable Task gRPC endpoint on" line
/// and the lines it printed before.
fn spawn(dir: &TempDir, args: &[&str]) -> (Child, String, Vec<String>) {
    let listening = spawn_listening(on_db(dir, args, false), &[GRPC]);
    let addr = listening.addr();
    (listening.child, addr, listening.before)
}

/// Waits (up to 60 s) for `id` to finish; asserts it completed and returns its state.
async fn completed(c: &mut Client, id: &str) -> OrchestrationState {
    completed_within(c, id, std::time::Duration::from_secs(60)).await
}

/// Starts the demo's `HelloCities` as `id` and waits for it to complete.
async fn run_hello_cities(c: &mut Client, id: &str) -> OrchestrationState {
    start(c, "HelloCities", id, None).await;
    completed(c, id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_grpc_runs_what_an_sdk_client_starts() {
    let dir = TempDir::new("grpc-worker");
    let (child, addr, _) = spawn(&dir, &["worker", "--grpc", "127.0.0.1:0"]);
    let mut c = connect(&addr).await;
    c.hello(()).await.unwrap();
    let done = run_hello_cities(&mut c, "from-grpc").await;
    assert!(done.output.unwrap().contains("Tokyo"));
    stop(child);
}

/// `DeleteTaskHub` to a real `worker --grpc` process empties its hub in place: the finished
/// instance is gone, and the same process runs a new start under the same ID at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_task_hub_empties_the_hub_of_a_running_worker() {
    let dir = TempDir::new("grpc-wipe");
    let (child, addr, _) = spawn(&dir, &["worker", "--grpc", "127.0.0.1:0"]);
    let mut c = connect(&addr).await;
    run_hello_cities(&mut c, "wiped").await;
    c.delete_task_hub(DeleteTaskHubRequest {}).await.unwrap();
    assert!(get(&mut c, "wiped").await.is_none(), "the instance is gone");
    run_hello_cities(&mut c, "wiped").await;
    stop(child);
}

/// An orchestration the demo registry does not name goes to the SDK worker connected to
/// `worker --grpc` (a Rust client plays it here): its turn arrives on `GetWorkItems`, its
/// answer completes the instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_grpc_hands_unknown_orchestrations_to_sdk_workers() {
    use taskhub_grpc::proto::orchestrator_action::OrchestratorActionType as A;
    use taskhub_grpc::proto::{
        work_item, CompleteOrchestrationAction, GetWorkItemsRequest, OrchestratorAction,
        OrchestratorResponse,
    };
    let dir = TempDir::new("grpc-sdk-worker");
    let (child, addr, _) = spawn(&dir, &["worker", "--grpc", "127.0.0.1:0"]);
    let mut c = connect(&addr).await;
    let mut items = c
        .get_work_items(GetWorkItemsRequest::default())
        .await
        .unwrap()
        .into_inner();
    start(&mut c, "WrittenInPython", "by-sdk", Some("21")).await;
    let item = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let item = items.message().await.unwrap().expect("the stream is open");
            if matches!(
                item.request,
                Some(work_item::Request::OrchestratorRequest(_))
            ) {
                return item;
            }
        }
    })
    .await
    .expect("an orchestration work item within 60 s");
    c.complete_orchestrator_task(OrchestratorResponse {
        instance_id: "by-sdk".into(),
        actions: vec![OrchestratorAction {
            id: 0,
            orchestrator_action_type: Some(A::CompleteOrchestration(CompleteOrchestrationAction {
                orchestration_status: OrchestrationStatus::Completed as i32,
                result: Some("42".into()),
                ..CompleteOrchestrationAction::default()
            })),
        }],
        completion_token: item.completion_token,
        ..OrchestratorResponse::default()
    })
    .await
    .unwrap();
    let done = completed(&mut c, "by-sdk").await;
    assert_eq!(done.output.as_deref(), Some("42"));
    // The open stream does not hold up a graceful stop.
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_grpc_only_and_the_address_rule() {
    let dir = TempDir::new("grpc-serve");
    let (child, addr, before) = spawn(&dir, &["serve", "--no-http", "--grpc", "127.0.0.1:0"]);
    assert!(
        !before.iter().any(|l| l.contains("dashboard and API on")),
        "{before:?}"
    );
    let mut c = connect(&addr).await;
    assert!(get(&mut c, "nobody").await.is_none());
    stop(child);

    // Off loopback without a token: refused before anything is opened.
    let out = run(&dir, &["serve", "--grpc", "0.0.0.0:0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("0.0.0.0:0") && err.contains("http_token"),
        "{err}"
    );
}

/// Issue 34: a payload an SDK sent that is not JSON (a large-payload token) is kept, and the
/// CLI shows it as a JSON string of its text; no input shows as `null`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opaque_payload_shows_as_text_in_the_cli() {
    let dir = TempDir::new("grpc-opaque");
    // No worker: the instances stay Pending with their inputs as sent.
    let (child, addr, _) = spawn(&dir, &["serve", "--no-http", "--grpc", "127.0.0.1:0"]);
    let mut c = connect(&addr).await;
    let token = "blob:v1:payloads:opaque-cli/input";
    for (id, input) in [("opaque-cli", Some(token)), ("absent-cli", None)] {
        start(&mut c, "Anything", id, input).await;
    }
    stop(child);
    let shown = common::json(&dir, &["instances", "show", "opaque-cli", "--json"]);
    assert_eq!(shown["input"], serde_json::json!(token), "{shown}");
    let shown = common::json(&dir, &["instances", "show", "absent-cli", "--json"]);
    assert_eq!(shown["input"], serde_json::Value::Null, "{shown}");
    let human = common::ok(&dir, &["instances", "show", "opaque-cli"]);
    assert!(human.contains(token), "{human}");
}
