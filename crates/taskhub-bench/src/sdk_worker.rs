//! A Rust stand-in for an SDK worker, for the `grpc` scenario: `taskhub-bench sdk-worker ADDR`
//! (a child process the scenario starts, so the parent's CPU time is the server's alone)
//! connects to the endpoint's `GetWorkItems`, decides each orchestration turn from its
//! history as an SDK would (the `Hello5` and `FanOut` workloads of `workloads.rs`, and `Big`
//! of the `large-starts` scenario, which completes with its input's size), runs the
//! `Noop` activity, and answers each work item at once, concurrently. The SDK's own speed is
//! so out of the figure.

use anyhow::Context as _;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use taskhub_grpc::proto::history_event::EventType as E;
use taskhub_grpc::proto::orchestrator_action::OrchestratorActionType as A;
use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::{
    work_item, ActivityRequest, ActivityResponse, CompleteOrchestrationAction, GetWorkItemsRequest,
    OrchestrationStatus, OrchestratorAction, OrchestratorRequest, OrchestratorResponse,
    ScheduleTaskAction, WorkItem,
};

use crate::h2_channel::H2Channel;

type Client = TaskHubSidecarServiceClient<H2Channel>;

/// How many work items of each kind the stand-in takes at once.
const CAPACITY: i32 = 1_000;

/// Runs the stand-in until its stream ends.
pub async fn run(addr: &str) -> anyhow::Result<()> {
    let origin = format!("http://{addr}")
        .parse()
        .with_context(|| format!("not an address: {addr}"))?;
    let client = Client::with_origin(H2Channel::connect(addr).await?, origin)
        .max_decoding_message_size(taskhub_grpc::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(taskhub_grpc::MAX_MESSAGE_BYTES);
    let mut stream = client
        .clone()
        .get_work_items(GetWorkItemsRequest {
            max_concurrent_orchestration_work_items: CAPACITY,
            max_concurrent_activity_work_items: CAPACITY,
            ..GetWorkItemsRequest::default()
        })
        .await
        .context("GetWorkItems")?
        .into_inner();
    // The answers in flight, polled by this one task (a task each would cost a spawn and
    // a copy of the call's future per work item).
    let mut answers = FuturesUnordered::new();
    loop {
        tokio::select! {
            item = stream.message() => match item.context("the work item stream")? {
                Some(item) => answers.push(answer(client.clone(), item)),
                None => break,
            },
            Some(()) = answers.next(), if !answers.is_empty() => {}
        }
    }
    Ok(())
}

/// Answers one work item (nothing for a kind the stand-in does not take).
async fn answer(mut client: Client, item: WorkItem) {
    let token = item.completion_token;
    let outcome = match item.request {
        Some(work_item::Request::OrchestratorRequest(r)) => client
            .complete_orchestrator_task(decide(&r, token))
            .await
            .map_err(|e| ("CompleteOrchestratorTask", e)),
        Some(work_item::Request::ActivityRequest(r)) => client
            .complete_activity_task(noop(&r, token))
            .await
            .map_err(|e| ("CompleteActivityTask", e)),
        _ => return,
    };
    if let Err((call, e)) = outcome {
        eprintln!("sdk-worker: {call}: {e}");
    }
}

/// `Noop`: answers its input.
fn noop(r: &ActivityRequest, token: String) -> ActivityResponse {
    ActivityResponse {
        instance_id: r
            .orchestration_instance
            .as_ref()
            .map(|o| o.instance_id.clone())
            .unwrap_or_default(),
        task_id: r.task_id,
        result: r.input.clone(),
        completion_token: token,
        ..ActivityResponse::default()
    }
}

fn schedule(id: u64, input: u64) -> OrchestratorAction {
    OrchestratorAction {
        id: i32::try_from(id).unwrap_or(i32::MAX),
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Noop".into(),
            input: Some(input.to_string()),
            ..ScheduleTaskAction::default()
        })),
    }
}

fn complete(result: u64) -> OrchestratorAction {
    OrchestratorAction {
        id: -1,
        orchestrator_action_type: Some(A::CompleteOrchestration(CompleteOrchestrationAction {
            orchestration_status: OrchestrationStatus::Completed as i32,
            result: Some(result.to_string()),
            ..CompleteOrchestrationAction::default()
        })),
    }
}

/// The new actions of one turn, as an SDK replaying `Hello5` or `FanOut` would answer.
fn decide(r: &OrchestratorRequest, token: String) -> OrchestratorResponse {
    let all = || r.past_events.iter().chain(&r.new_events);
    let mut name = String::new();
    let mut input = 0u64;
    let mut input_bytes = 0u64;
    let mut completed = 0u64;
    let mut sum = 0u64;
    for e in all() {
        match &e.event_type {
            Some(E::ExecutionStarted(s)) => {
                name.clone_from(&s.name);
                input = s.input.as_deref().and_then(|i| i.parse().ok()).unwrap_or(0);
                input_bytes = s.input.as_ref().map_or(0, |i| i.len() as u64);
            }
            Some(E::TaskCompleted(c)) => {
                completed += 1;
                sum += c
                    .result
                    .as_deref()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
            _ => {}
        }
    }
    let scheduled = r
        .past_events
        .iter()
        .filter(|e| matches!(e.event_type, Some(E::TaskScheduled(_))))
        .count() as u64;
    let actions = match name.as_str() {
        "Hello5" if completed == 5 => vec![complete(sum)],
        "Hello5" if scheduled == completed => vec![schedule(scheduled, scheduled)],
        "FanOut" if scheduled == 0 => (0..input).map(|i| schedule(i, i)).collect(),
        "FanOut" if completed == input => vec![complete(sum)],
        // `large-starts`: completes at once with the size of its input.
        "Big" => vec![complete(input_bytes)],
        _ => Vec::new(),
    };
    OrchestratorResponse {
        instance_id: r.instance_id.clone(),
        actions,
        completion_token: token,
        ..OrchestratorResponse::default()
    }
}
