//! Small helpers over the generated client (taskhub-cli's tests use them too, through
//! `#[path]`: `super::STUCK` is the including crate's deadline).

use std::time::Duration;

use taskhub_grpc::proto::task_hub_sidecar_service_client::TaskHubSidecarServiceClient;
use taskhub_grpc::proto::{
    CreateInstanceRequest, GetEntityRequest, GetEntityResponse, GetInstanceRequest,
    GetWorkItemsRequest, HistoryEvent, OrchestrationFilter, OrchestrationState,
    OrchestrationStatus, SignalEntityRequest, StreamInstanceHistoryRequest, WorkItemFilters,
};
use taskhub_grpc::tonic::transport::Channel;
use taskhub_grpc::tonic::{Code, Request, Status};

pub type Client = TaskHubSidecarServiceClient<Channel>;

/// A request with a gRPC deadline.
pub fn within<T>(message: T, deadline: Duration) -> Request<T> {
    let mut r = Request::new(message);
    r.set_timeout(deadline);
    r
}

/// A call's answer that must be a refusal.
pub trait Refused {
    /// The refusal, asserted to carry `code` (a success fails the test).
    fn refused(self, code: Code) -> Status;
}

impl<T: std::fmt::Debug> Refused for Result<T, Status> {
    fn refused(self, code: Code) -> Status {
        let e = self.unwrap_err();
        assert_eq!(e.code(), code, "{e:?}");
        e
    }
}

/// Asserts that the refusal's message starts with `prefix` (the field it names).
pub fn assert_names(e: &Status, prefix: &str) {
    assert!(e.message().starts_with(prefix), "{}", e.message());
}

/// Asserts that the refusal's message contains `text`.
pub fn assert_says(e: &Status, text: &str) {
    assert!(e.message().contains(text), "{}", e.message());
}

/// Work-item filters that take the orchestrations `names` (each with the versions it lists;
/// none: any version) and nothing else.
pub fn orchestration_filters(names: &[(&str, &[&str])]) -> WorkItemFilters {
    WorkItemFilters {
        orchestrations: names
            .iter()
            .map(|(name, versions)| OrchestrationFilter {
                name: (*name).into(),
                versions: versions.iter().map(|v| (*v).into()).collect(),
            })
            .collect(),
        ..WorkItemFilters::default()
    }
}

/// A `GetWorkItems` request that sends `filters`.
pub fn filtered(filters: WorkItemFilters) -> GetWorkItemsRequest {
    GetWorkItemsRequest {
        work_item_filters: Some(filters),
        ..GetWorkItemsRequest::default()
    }
}

/// A `GetInstance` request for `id`, with its inputs and outputs if `with_payloads`.
pub fn instance_request(id: &str, with_payloads: bool) -> GetInstanceRequest {
    GetInstanceRequest {
        instance_id: id.to_owned(),
        get_inputs_and_outputs: with_payloads,
    }
}

/// Starts `name` with `input` (JSON text) under `id`.
pub async fn start(c: &mut Client, name: &str, id: &str, input: Option<&str>) -> String {
    c.start_instance(CreateInstanceRequest {
        instance_id: id.to_owned(),
        name: name.to_owned(),
        input: input.map(str::to_owned),
        ..CreateInstanceRequest::default()
    })
    .await
    .unwrap()
    .into_inner()
    .instance_id
}

/// Waits (gRPC deadline: 60 s) for the instance to finish; its state with inputs and outputs.
pub async fn wait_done(c: &mut Client, id: &str) -> OrchestrationState {
    let r = c
        .wait_for_instance_completion(within(instance_request(id, true), super::STUCK))
        .await
        .unwrap()
        .into_inner();
    assert!(r.exists, "{id} exists");
    r.orchestration_state.unwrap()
}

/// Waits as [`wait_done`] does and asserts that the instance completed; its state.
pub async fn completed(c: &mut Client, id: &str) -> OrchestrationState {
    let st = wait_done(c, id).await;
    assert_eq!(
        st.orchestration_status,
        OrchestrationStatus::Completed as i32,
        "{st:?}"
    );
    st
}

/// The state with inputs and outputs (`None`: does not exist).
pub async fn get(c: &mut Client, id: &str) -> Option<OrchestrationState> {
    let r = c
        .get_instance(instance_request(id, true))
        .await
        .unwrap()
        .into_inner();
    r.exists.then(|| r.orchestration_state.unwrap())
}

/// Polls (bounded) until the instance has `status`.
pub async fn until_status(
    c: &mut Client,
    id: &str,
    status: OrchestrationStatus,
) -> OrchestrationState {
    let started = std::time::Instant::now();
    loop {
        if let Some(s) = get(c, id).await {
            if s.orchestration_status == status as i32 {
                return s;
            }
        }
        assert!(
            started.elapsed() < super::STUCK,
            "{id} never became {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn status(s: &OrchestrationState) -> OrchestrationStatus {
    OrchestrationStatus::try_from(s.orchestration_status).unwrap()
}

/// The entity's serialized state (empty for none), or `None` if it does not exist.
pub async fn entity_state(c: &mut Client, id: &str) -> Option<String> {
    let r = entity(c, id, true).await;
    r.exists
        .then(|| r.entity.unwrap().serialized_state.unwrap_or_default())
}

/// `GetEntity` of `id`, with its state if `with_state`; the call must succeed.
pub async fn entity(c: &mut Client, id: &str, with_state: bool) -> GetEntityResponse {
    c.get_entity(GetEntityRequest {
        instance_id: id.into(),
        include_state: with_state,
    })
    .await
    .unwrap()
    .into_inner()
}

/// Polls (bounded) until the entity's state is `want`.
pub async fn until_state(c: &mut Client, id: &str, want: &str) {
    let started = std::time::Instant::now();
    while entity_state(c, id).await.as_deref() != Some(want) {
        assert!(
            started.elapsed() < super::STUCK,
            "{id} never reached {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The whole history `request` streams, its chunks put together.
pub async fn streamed_history(
    c: &mut Client,
    request: StreamInstanceHistoryRequest,
) -> Vec<HistoryEvent> {
    let mut stream = c
        .stream_instance_history(request)
        .await
        .unwrap()
        .into_inner();
    let mut events = Vec::new();
    while let Some(chunk) = stream.message().await.unwrap() {
        events.extend(chunk.events);
    }
    events
}

/// Signals `add` of `n` to the entity `id` (request ID `ignored`).
pub async fn signal_add(c: &mut Client, id: &str, n: i64) {
    c.signal_entity(SignalEntityRequest {
        instance_id: id.into(),
        name: "add".into(),
        input: Some(n.to_string()),
        request_id: "ignored".into(),
        ..SignalEntityRequest::default()
    })
    .await
    .unwrap();
}
