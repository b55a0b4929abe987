//! Backpressure to SDK workers (issue 33): a worker that opens `GetWorkItems` with a large
//! capacity and never reads is closed after `stream_read_timeout` and its work is taken over
//! at once by a reading worker; the stalled stream's late answers are refused naming the
//! stream, and every item is completed once. Time goes through a manual clock.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::calls::{assert_says, Refused};

use std::time::Duration;

use common::sdk::{answer_of, first_turn, DispatchServer};
use taskhub::executor::{ExecutorError, OrchestrationDecision, OrchestrationWork, RemoteExecutor};
use taskhub::{EventKind, Payload};
use taskhub_grpc::proto::{work_item, OrchestratorResponse};
use taskhub_grpc::DispatcherSettings;
use taskhub_test_support::wait::until;
use tokio::task::JoinHandle;
use tonic::Code;

/// A first turn whose input is `kib` KiB: a few of them fill the HTTP/2 windows of a client
/// that does not read (hyper's client: 2 MiB a stream) and the server's send buffer; the rest
/// stay in the dispatcher's stream queue.
fn large_turn(id: &str, kib: usize) -> OrchestrationWork {
    let mut work = first_turn(id, "Big");
    let text = format!("\"{}\"", "x".repeat(kib * 1024));
    for e in &mut work.new {
        if let EventKind::ExecutionStarted { input, .. } = &mut e.event {
            *input = Payload::from_json(&text).unwrap();
        }
    }
    work
}

/// `n` turns of 1 KiB each (`o0`, `o1`, …) handed to the dispatcher, as the runtime would.
fn spawn_large_turns(
    server: &DispatchServer,
    n: usize,
) -> Vec<JoinHandle<Result<OrchestrationDecision, ExecutorError>>> {
    (0..n)
        .map(|i| {
            let d = server.dispatcher.clone();
            tokio::spawn(async move { d.orchestrate(large_turn(&format!("o{i}"), 1024)).await })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_reads_is_closed_and_a_reading_worker_takes_its_work_over() {
    let mut settings = DispatcherSettings::default();
    settings.stream_read_timeout = Duration::from_secs(10);
    let (server, clock) = DispatchServer::on_manual_clock(settings).await;
    let mut stalled = server.worker(1_000, 1_000).await;
    let calls = spawn_large_turns(&server, 8);
    // All eight go to the only worker, which reads none: some wait unread in its queue. (Wait
    // for all eight calls to be submitted, or a late one would go to the reader below.)
    let d = server.dispatcher.clone();
    until(
        "all eight out, items unread on the stalled stream",
        || d.peak_items()[0] == 8 && d.unread_items().iter().any(|(_, n)| *n > 0),
        || (d.peak_items(), d.unread_items()),
    )
    .await;
    let mut reader = server.worker(1_000, 1_000).await;
    reader.expect_none().await;

    clock.advance(Duration::from_secs(11));
    let mut tokens = Vec::new();
    for _ in 0..8 {
        let item = reader.expect().await;
        assert!(matches!(
            item.request,
            Some(work_item::Request::OrchestratorRequest(_))
        ));
        tokens.push(item.completion_token);
    }
    assert_eq!(
        server.dispatcher.connected_workers(),
        1,
        "the stalled one is gone"
    );

    // What reached the stalled client before its stream was closed, then the reason.
    let mut late = Vec::new();
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(10), stalled.stream.message())
            .await
            .expect("the stalled stream ends")
        {
            Ok(Some(item)) => late.push(item.completion_token),
            Ok(None) => panic!("the stream ends with a status naming the timeout"),
            Err(status) => break status,
        }
    };
    assert_eq!(closed.code(), Code::Unavailable);
    assert_says(&closed, "grpc_stream_read_timeout");
    // Its late answers are refused, naming the stream the token was issued on.
    for t in late.iter().filter(|t| !t.is_empty()) {
        let e = stalled
            .answer_turn(OrchestratorResponse {
                completion_token: t.clone(),
                ..OrchestratorResponse::default()
            })
            .await
            .refused(Code::NotFound);
        assert_says(&e, "work-item stream");
    }
    // The taker's answers complete every call, once each.
    for t in &tokens {
        reader
            .client
            .complete_orchestrator_task(OrchestratorResponse {
                completion_token: t.clone(),
                ..OrchestratorResponse::default()
            })
            .await
            .unwrap();
    }
    for call in calls {
        answer_of(call).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_queue_holds_no_more_than_its_bound_whatever_the_declared_capacity() {
    let mut settings = DispatcherSettings::default();
    settings.stream_queue_items = 2;
    let (server, _clock) = DispatchServer::on_manual_clock(settings).await;
    let _stalled = server.worker(1_000, 1_000).await;
    let _calls = spawn_large_turns(&server, 20);
    // Every call has submitted its item (a hand-out happens within the submit).
    let d = server.dispatcher.clone();
    until(
        "all twenty submitted and the queue full",
        || d.peak_items()[0] == 20 && d.unread_items().iter().any(|(_, n)| *n >= 2),
        || (d.peak_items(), d.unread_items()),
    )
    .await;
    assert_eq!(
        server.dispatcher.unread_items(),
        [(0, 2)],
        "the declared capacity is 1,000, the queue's bound 2"
    );
}
