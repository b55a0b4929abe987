//! History streaming, as the .NET worker asks for it: it announces
//! `WORKER_CAPABILITY_HISTORY_STREAMING` on every connection
//! (microsoft/durabletask-dotnet `src/Worker/Grpc/GrpcDurableTaskWorkerOptions.cs`, line 45 at
//! ec41350: `Capabilities = { HistoryStreaming }`) and, for a request with
//! `RequiresHistoryStreaming`, reads the past events with
//! `StreamInstanceHistory { InstanceId, ExecutionId, ForWorkItemProcessing = true }`
//! (`GrpcDurableTaskWorker.Processor.cs`, `BuildRuntimeStateAsync`, lines 260-290), keeping the
//! request's `NewEvents`. A turn over the inline bound goes only to such a worker, without its
//! past events; with only other workers connected it is refused at once, naming its size.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;

use common::sdk::{answer, first_turn, DispatchServer, FakeWorker};
use taskhub::executor::{ExecutorError, OrchestrationWork, RemoteExecutor};
use taskhub::{EventKind, HistoryEvent, Payload, Timestamp};
use taskhub_grpc::proto::{
    work_item, GetWorkItemsRequest, StreamInstanceHistoryRequest, WorkerCapability,
};
use taskhub_grpc::DispatcherSettings;
use taskhub_storage::SystemClock;

/// A turn of instance `id` whose past holds 40 activities with 1 KiB inputs (about 45 KiB).
fn long_turn(id: &str) -> OrchestrationWork {
    let first = first_turn(id, "Long");
    let t = Timestamp::from_millis(1_700_000_000_000);
    let mut past = first.new.clone();
    for task_id in 0..40 {
        past.push(HistoryEvent::new(
            t,
            EventKind::TaskScheduled {
                task_id,
                name: "Step".into(),
                version: None,
                input: Payload::from_json(format!("\"{}\"", "x".repeat(1024))).unwrap(),
                attempt: 1,
                tags: Default::default(),
            },
        ));
        past.push(HistoryEvent::new(
            t,
            EventKind::TaskCompleted {
                task_id,
                result: Payload::from_json(task_id.to_string()).unwrap(),
            },
        ));
    }
    OrchestrationWork::new(
        first.instance.clone(),
        first.execution_id.clone(),
        "Long".into(),
        past,
        vec![HistoryEvent::new(t, EventKind::OrchestratorStarted)],
    )
}

fn settings() -> DispatcherSettings {
    let mut s = DispatcherSettings::default();
    s.inline_history_bytes = 16 * 1024;
    s
}

async fn worker(server: &DispatchServer, streams: bool) -> FakeWorker {
    let mut client = server.client().await;
    let capabilities = if streams {
        vec![WorkerCapability::HistoryStreaming as i32]
    } else {
        Vec::new()
    };
    let stream = client
        .get_work_items(GetWorkItemsRequest {
            capabilities,
            ..GetWorkItemsRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    FakeWorker { client, stream }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_turn_goes_without_its_past_which_the_worker_streams_whole_and_in_order() {
    let server = DispatchServer::start(Arc::new(SystemClock::new()), settings()).await;
    // Inline, for comparison: what a worker that gets the whole turn sees.
    let mut inline_settings = settings();
    inline_settings.inline_history_bytes = usize::MAX;
    let reference = DispatchServer::start(Arc::new(SystemClock::new()), inline_settings).await;
    let mut plain = worker(&reference, false).await;
    let _ref_turn = reference.orchestrate(long_turn("o1"));
    let whole = plain.expect().await;
    let Some(work_item::Request::OrchestratorRequest(whole)) = whole.request else {
        panic!()
    };
    assert_eq!(whole.past_events.len(), 82);

    let mut w = worker(&server, true).await;
    let turn = server.orchestrate(long_turn("o1"));
    let item = w.expect().await;
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!("{item:?}")
    };
    assert!(r.requires_history_streaming);
    assert!(r.past_events.is_empty());
    assert_eq!(r.new_events, whole.new_events);
    let request = StreamInstanceHistoryRequest {
        instance_id: "o1".into(),
        execution_id: r.execution_id.clone(),
        for_work_item_processing: true,
    };
    let streamed = common::calls::streamed_history(&mut w.client, request).await;
    assert_eq!(streamed, whole.past_events);
    let done = answer(&item, Vec::new());
    w.answer_turn(done).await.unwrap();
    turn.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_turn_goes_only_to_a_worker_that_streams_and_is_refused_clearly_without_one() {
    let server = DispatchServer::start(Arc::new(SystemClock::new()), settings()).await;
    let mut plain = worker(&server, false).await;
    // Only a worker that does not stream: refused at once, naming the size.
    let e = server
        .dispatcher
        .orchestrate(long_turn("o1"))
        .await
        .unwrap_err();
    assert!(matches!(e, ExecutorError::Abandoned { .. }), "{e:?}");
    assert!(e.to_string().contains("history streaming"), "{e}");
    // A small turn still goes to it.
    let small = server.orchestrate(first_turn("s1", "Small"));
    let item = plain.expect().await;
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!("{item:?}")
    };
    assert!(!r.requires_history_streaming);
    // With a streaming worker connected, the large turn goes to it, never to the other.
    let mut streaming = worker(&server, true).await;
    let large = server.orchestrate(long_turn("o2"));
    let item = streaming.expect().await;
    let Some(work_item::Request::OrchestratorRequest(r)) = &item.request else {
        panic!("{item:?}")
    };
    assert_eq!(r.instance_id, "o2");
    assert!(r.requires_history_streaming);
    plain.expect_none().await;
    small.abort();
    large.abort();
}
