//! Chunked completions, as the .NET worker sends them when a turn's answer is over its chunk
//! size (microsoft/durabletask-dotnet, `src/Worker/Grpc/GrpcDurableTaskWorker.Processor.cs`,
//! `CompleteOrchestratorTaskWithChunkingAsync`, lines 1218-1275 at ec41350: every part carries
//! `InstanceId`, `CustomStatus`, `CompletionToken`; `IsPartial` on all but the last; a
//! `ChunkIndex` from 0 on every part once there is more than one; `NumEventsProcessed` null on
//! part 0 and 0 after), and the Java worker since 1.6 (`DurableTaskGrpcWorker.java`,
//! `completeOrchestratorTaskWithChunking`, the same shape): the parts make one decision, in
//! order; a broken sequence is refused naming what was expected; the parts are bounded.
#![allow(deprecated, reason = "test code; the deprecated chunking fields")]

mod common;

use common::calls::Refused;

use std::sync::Arc;

use common::sdk::{first_turn, DispatchServer, FakeWorker};
use taskhub::executor::Decision;
use taskhub_grpc::proto::{
    orchestrator_action::OrchestratorActionType as A, OrchestratorAction, OrchestratorResponse,
    ScheduleTaskAction,
};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;
use tonic::Code;

fn schedule(id: i32) -> OrchestratorAction {
    OrchestratorAction {
        id,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: format!("Step{id}"),
            input: Some("\"x\"".into()),
            ..ScheduleTaskAction::default()
        })),
    }
}

/// Part `index` of the answer under `token` with the actions `ids`, as .NET builds it.
fn part(token: &str, index: i32, ids: std::ops::Range<i32>, last: bool) -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: "o1".into(),
        completion_token: token.into(),
        custom_status: Some("\"big\"".into()),
        actions: ids.map(schedule).collect(),
        num_events_processed: (index > 0).then_some(0),
        is_partial: !last,
        chunk_index: Some(index),
        ..OrchestratorResponse::default()
    }
}

async fn server(settings: DispatcherSettings) -> DispatchServer {
    DispatchServer::start(Arc::new(SystemClock::new()), settings).await
}

/// The turn the answer's parts are for.
type Turn = tokio::task::JoinHandle<
    Result<taskhub::executor::OrchestrationDecision, taskhub::executor::ExecutorError>,
>;

/// A server with `settings`, a worker with room for one turn, and a turn out at it under the
/// returned token.
async fn turn_out(settings: DispatcherSettings) -> (DispatchServer, FakeWorker, Turn, String) {
    let server = server(settings).await;
    let mut w = server.worker(1, 1).await;
    let turn = server.orchestrate(first_turn("o1", "Big"));
    let token = w.expect().await.completion_token;
    (server, w, turn, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parts_of_a_chunked_answer_make_one_decision_in_order() {
    let (_server, mut w, turn, token) = turn_out(DispatcherSettings::default()).await;
    w.answer_turn(part(&token, 0, 0..3, false)).await.unwrap();
    w.answer_turn(part(&token, 1, 3..5, false)).await.unwrap();
    assert!(
        !turn.is_finished(),
        "the item stays out until the last part"
    );
    w.answer_turn(part(&token, 2, 5..6, true)).await.unwrap();
    let decision = turn.await.unwrap().unwrap();
    let names: Vec<String> = decision
        .decisions
        .iter()
        .map(|d| match d {
            Decision::ScheduleActivity { name, .. } => name.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        ["Step0", "Step1", "Step2", "Step3", "Step4", "Step5"]
    );
    assert_eq!(decision.custom_status.unwrap().as_str(), "\"big\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_sequence_is_refused_naming_the_expected_part_and_can_start_over() {
    let (_server, mut w, turn, token) = turn_out(DispatcherSettings::default()).await;
    // A part that skips one.
    w.answer_turn(part(&token, 0, 0..2, false)).await.unwrap();
    let e = w
        .answer_turn(part(&token, 2, 2..3, true))
        .await
        .refused(Code::FailedPrecondition);
    assert!(
        e.message()
            .contains("part 2 came where part 1 was expected"),
        "{e:?}"
    );
    // A sequence that never began.
    let e = w
        .client
        .complete_orchestrator_task(part(&token, 1, 2..3, true))
        .await
        .unwrap_err();
    assert!(e.message().contains("part 0 was expected"), "{e:?}");
    // Under a token nobody holds.
    w.answer_turn(part("nobody", 0, 0..1, false))
        .await
        .refused(Code::NotFound);
    assert!(!turn.is_finished());
    // Sent again from part 0: taken.
    w.answer_turn(part(&token, 0, 0..2, false)).await.unwrap();
    w.answer_turn(part(&token, 1, 2..3, true)).await.unwrap();
    assert_eq!(turn.await.unwrap().unwrap().decisions.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parts_are_bounded_in_bytes_and_actions() {
    let mut settings = DispatcherSettings::default();
    settings.chunked_answer_bytes = 300;
    settings.max_actions_per_turn = 4;
    let (_server, mut w, turn, token) = turn_out(settings).await;
    w.answer_turn(part(&token, 0, 0..3, false)).await.unwrap();
    let e = w
        .answer_turn(part(&token, 1, 3..5, true))
        .await
        .refused(Code::ResourceExhausted);
    assert!(e.message().contains("grpc_max_actions_per_turn"), "{e:?}");
    let big = OrchestratorResponse {
        custom_status: Some(format!("\"{}\"", "x".repeat(400))),
        ..part(&token, 0, 0..1, false)
    };
    let e = w.answer_turn(big).await.refused(Code::ResourceExhausted);
    assert!(e.message().contains("grpc_chunked_answer_mib"), "{e:?}");
    turn.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parts_of_a_worker_that_went_away_count_for_nothing_for_the_next_holder() {
    let server = server(DispatcherSettings::default()).await;
    let mut first = server.worker(1, 1).await;
    let turn = server.orchestrate(first_turn("o1", "Big"));
    let token = first.expect().await.completion_token;
    first
        .client
        .complete_orchestrator_task(part(&token, 0, 0..2, false))
        .await
        .unwrap();
    // The first worker goes away mid-sequence; the item goes to the next one, whose own
    // sequence starts at part 0.
    drop(first);
    let mut next = server.worker(1, 1).await;
    let token = next.expect().await.completion_token;
    next.answer_turn(part(&token, 0, 0..1, false))
        .await
        .unwrap();
    next.answer_turn(part(&token, 1, 1..2, true)).await.unwrap();
    assert_eq!(turn.await.unwrap().unwrap().decisions.len(), 2);
}
