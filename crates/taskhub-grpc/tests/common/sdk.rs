//! A Rust client playing an SDK worker: `GetWorkItems` with a declared concurrency, the next
//! work item (health pings skipped), completions and abandons; and a server whose worker
//! calls go to a [`Dispatcher`] (the runtime is not involved: tests call the dispatcher as
//! the runtime's `RemoteExecutor`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use taskhub::executor::{
    ActivityOutcome, ActivityWork, EntityBatchOutcome, EntityWork, ExecutorError,
    OrchestrationDecision, OrchestrationWork, RemoteExecutor,
};
use taskhub::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_grpc::proto::orchestrator_action::OrchestratorActionType;
use taskhub_grpc::proto::{
    work_item, ActivityResponse, EntityBatchResult, OrchestratorAction, OrchestratorRequest,
    OrchestratorResponse, ScheduleTaskAction, WorkItem,
};
use taskhub_grpc::{Dispatcher, DispatcherSettings, GrpcConfig};
use taskhub_storage::{Clock, ManualClock};
use tokio::task::JoinHandle;
use tonic::{Status, Streaming};

use super::calls::Client;
use super::serving::{self, Serving};
use super::{open_hub, Backend, TempDir};

/// A dispatcher call running on a task of its own: the handle answers what it answered.
pub type Answer<T> = JoinHandle<Result<T, ExecutorError>>;

/// The endpoint over a memory hub with `dispatcher` serving the worker calls.
pub struct DispatchServer {
    pub addr: SocketAddr,
    pub dispatcher: Dispatcher,
    _serving: Serving,
    _dir: TempDir,
}

impl DispatchServer {
    pub async fn start(clock: Arc<dyn Clock>, settings: DispatcherSettings) -> Self {
        let dir = TempDir::new("grpc-dispatch");
        let hub = open_hub(Backend::Memory, &dir).await;
        let dispatcher = Dispatcher::new(clock, settings);
        let config = GrpcConfig::new(hub).with_workers(Arc::new(dispatcher.clone()));
        let serving = Serving::start(config).await;
        Self {
            addr: serving.addr,
            dispatcher,
            _serving: serving,
            _dir: dir,
        }
    }

    /// As [`start`](Self::start), on a manual clock (at 1,700,000,000,000 ms) that the test
    /// advances.
    pub async fn on_manual_clock(settings: DispatcherSettings) -> (Self, ManualClock) {
        let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
        let server = Self::start(Arc::new(clock.clone()), settings).await;
        (server, clock)
    }

    pub async fn client(&self) -> Client {
        serving::client(self.addr).await
    }

    /// A fake SDK worker declaring room for `orchestrations` and `activities` items.
    pub async fn worker(&self, orchestrations: i32, activities: i32) -> FakeWorker {
        serving::fake_worker(self.addr, orchestrations, activities).await
    }

    /// The runtime's call for the turn `work`, spawned.
    pub fn orchestrate(&self, work: OrchestrationWork) -> Answer<OrchestrationDecision> {
        self.spawn(|d| async move { d.orchestrate(work).await })
    }

    /// The runtime's call for the activity `work`, spawned.
    pub fn run_activity(&self, work: ActivityWork) -> Answer<ActivityOutcome> {
        self.spawn(|d| async move { d.run_activity(work).await })
    }

    /// The runtime's call for the entity batch `work`, spawned.
    pub fn run_entity(&self, work: EntityWork) -> Answer<EntityBatchOutcome> {
        self.spawn(|d| async move { d.run_entity(work).await })
    }

    /// Runs `call` on a task of its own with the dispatcher, as the runtime calls it.
    fn spawn<T, F>(&self, call: impl FnOnce(Dispatcher) -> F) -> Answer<T>
    where
        F: std::future::Future<Output = Result<T, ExecutorError>> + Send + 'static,
        T: Send + 'static,
    {
        tokio::spawn(call(self.dispatcher.clone()))
    }
}

/// What a spawned dispatcher call answered; fails the test if it did not within 10 s.
pub async fn answer_of<T>(call: JoinHandle<Result<T, ExecutorError>>) -> Result<T, ExecutorError> {
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call answered within 10 s")
        .unwrap()
}

/// The error a spawned dispatcher call failed with (within 10 s).
pub async fn error_of<T: std::fmt::Debug>(
    call: JoinHandle<Result<T, ExecutorError>>,
) -> ExecutorError {
    answer_of(call).await.unwrap_err()
}

/// Advances `clock` past the two-minute item timeout while `call` waits on a worker that holds
/// its item: still waiting at 110 s, failed `TimedOut { seconds: 120 }` at 121 s.
pub async fn held_past_the_timeout<T: std::fmt::Debug>(
    clock: &ManualClock,
    call: JoinHandle<Result<T, ExecutorError>>,
) {
    clock.advance(Duration::from_secs(110));
    tokio::task::yield_now().await;
    assert!(!call.is_finished(), "not yet: the timeout is 2 minutes");
    clock.advance(Duration::from_secs(11));
    let e = error_of(call).await;
    assert!(
        matches!(e, ExecutorError::TimedOut { seconds: 120, .. }),
        "{e:?}"
    );
}

/// Moves `clock` to 1 s before `deadline`, the wait `call` is in, and asserts it still waits;
/// then 2 s on, 1 s past it. Each move is given 100 ms of real time to be seen.
pub async fn waits_until<T>(clock: &ManualClock, call: &JoinHandle<T>, deadline: Duration) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(deadline - Duration::from_secs(1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!call.is_finished());
    clock.advance(Duration::from_secs(2));
}

/// Closes the dispatcher; then the endpoint, dropped, shuts down.
impl Drop for DispatchServer {
    fn drop(&mut self) {
        self.dispatcher.close();
    }
}

/// A connected fake SDK worker.
pub struct FakeWorker {
    pub client: Client,
    pub stream: Streaming<WorkItem>,
}

impl FakeWorker {
    /// Sends the answer to an orchestration turn; what the endpoint answered.
    pub async fn answer_turn(&mut self, response: OrchestratorResponse) -> Result<(), Status> {
        self.client
            .complete_orchestrator_task(response)
            .await
            .map(drop)
    }

    /// Sends an activity's result; what the endpoint answered.
    pub async fn answer_activity(&mut self, response: ActivityResponse) -> Result<(), Status> {
        self.client.complete_activity_task(response).await.map(drop)
    }

    /// Sends an entity batch's result; what the endpoint answered.
    pub async fn answer_batch(&mut self, result: EntityBatchResult) -> Result<(), Status> {
        self.client.complete_entity_task(result).await.map(drop)
    }

    /// The next work item that is not a health ping, within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<WorkItem> {
        tokio::time::timeout(within, async {
            loop {
                let item = self.stream.message().await.unwrap()?;
                if !matches!(item.request, Some(work_item::Request::HealthPing(_))) {
                    return Some(item);
                }
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next work item; fails the test if none comes within 10 s.
    pub async fn expect(&mut self) -> WorkItem {
        self.next(Duration::from_secs(10))
            .await
            .expect("a work item within 10 s")
    }

    /// Fails the test if a work item comes within 300 ms.
    pub async fn expect_none(&mut self) {
        if let Some(item) = self.next(Duration::from_millis(300)).await {
            panic!("no work item expected, got {item:?}");
        }
    }

    /// Fails the test unless the next message on the stream, within 10 s, is a health ping.
    pub async fn expect_health_ping(&mut self) {
        let item = tokio::time::timeout(Duration::from_secs(10), self.stream.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(
            matches!(item.request, Some(work_item::Request::HealthPing(_))),
            "{item:?}"
        );
    }
}

/// The orchestration turn `item` carries; fails the test if it is not one.
pub fn turn_of(item: &WorkItem) -> &OrchestratorRequest {
    match &item.request {
        Some(work_item::Request::OrchestratorRequest(r)) => r,
        other => panic!("not an orchestration turn: {other:?}"),
    }
}

/// The answer to the turn `item` carries: `actions`, with its instance and completion token.
pub fn answer(item: &WorkItem, actions: Vec<OrchestratorAction>) -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: turn_of(item).instance_id.clone(),
        actions,
        completion_token: item.completion_token.clone(),
        ..OrchestratorResponse::default()
    }
}

/// The action that schedules activity `name` with the JSON `input`, as action `id`.
pub fn schedule_task(id: i32, name: &str, input: &str) -> OrchestratorAction {
    OrchestratorAction {
        id,
        orchestrator_action_type: Some(OrchestratorActionType::ScheduleTask(ScheduleTaskAction {
            name: name.into(),
            input: Some(input.into()),
            ..ScheduleTaskAction::default()
        })),
    }
}

/// The activity name of an activity work item.
pub fn activity_name(item: &WorkItem) -> &str {
    match &item.request {
        Some(work_item::Request::ActivityRequest(a)) => &a.name,
        other => panic!("not an activity: {other:?}"),
    }
}

pub fn instance(id: &str) -> InstanceId {
    InstanceId::new(id).unwrap()
}

pub fn execution() -> ExecutionId {
    ExecutionId::new("e1").unwrap()
}

/// Activity `name` with input `input` (JSON), task 0 of `instance`.
pub fn activity(instance_id: &str, name: &str) -> ActivityWork {
    ActivityWork::new(instance(instance_id), execution(), 0, name.to_owned())
        .with_input(Payload::from_json("\"x\"").unwrap())
}

/// The first turn of orchestration `name` of `instance_id`.
pub fn first_turn(instance_id: &str, name: &str) -> OrchestrationWork {
    let t = Timestamp::from_millis(1_700_000_000_000);
    OrchestrationWork::new(
        instance(instance_id),
        execution(),
        name.to_owned(),
        Vec::new(),
        vec![
            HistoryEvent::new(t, EventKind::OrchestratorStarted),
            HistoryEvent::new(
                t,
                EventKind::ExecutionStarted {
                    name: name.to_owned(),
                    version: None,
                    input: Payload::from_json("{\"n\":1}").unwrap(),
                    execution_id: execution(),
                    parent: None,
                    scheduled_start: None,
                    applied_event_ids: Vec::new(),
                    tags: Default::default(),
                },
            ),
        ],
    )
}

/// A Taskhub worker whose registry is empty: every orchestration and activity goes to the
/// SDK workers connected to its gRPC endpoint (through the [`Dispatcher`]).
pub struct SdkServer {
    pub addr: SocketAddr,
    pub hub: taskhub::TaskHub,
    pub dispatcher: Dispatcher,
    worker: taskhub::WorkerHandle,
    serving: Serving,
    _dir: TempDir,
}

impl SdkServer {
    /// A server for an SDK without entities (Go, Java) whose worker must get neither health
    /// pings nor entity batches: pings every second (besides `settings`) and an entity batch of
    /// `@counter@KEY` waiting, so that either reaching the worker shows in its log.
    pub async fn start_without_entities(
        backend: Backend,
        mut settings: DispatcherSettings,
        key: &str,
    ) -> Self {
        settings.health_ping_interval = Duration::from_secs(1);
        let server = Self::start_with_settings(backend, taskhub::Registry::new(), settings).await;
        let entity = taskhub::EntityId::new("counter", key).unwrap();
        server
            .hub
            .client()
            .signal_entity(&entity, "add", &1)
            .await
            .unwrap();
        server
    }

    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, taskhub::Registry::new()).await
    }

    /// As [`start`](Self::start), with what `registry` names running in Rust.
    pub async fn start_with(backend: Backend, registry: taskhub::Registry) -> Self {
        Self::start_with_settings(backend, registry, DispatcherSettings::default()).await
    }

    /// As [`start_with`](Self::start_with), with the dispatcher's `settings`.
    pub async fn start_with_settings(
        backend: Backend,
        registry: taskhub::Registry,
        settings: DispatcherSettings,
    ) -> Self {
        let dir = TempDir::new("grpc-sdk");
        let hub = open_hub(backend, &dir).await;
        let dispatcher = Dispatcher::new(Arc::clone(hub.clock()), settings);
        let worker =
            taskhub::Worker::start_with_executor(&hub, registry, Arc::new(dispatcher.clone()))
                .await
                .unwrap();
        let config = GrpcConfig::new(hub.clone()).with_workers(Arc::new(dispatcher.clone()));
        let serving = Serving::start(config).await;
        Self {
            addr: serving.addr,
            hub,
            dispatcher,
            worker,
            serving,
            _dir: dir,
        }
    }

    pub async fn client(&self) -> Client {
        serving::client(self.addr).await
    }

    /// A fake SDK worker declaring room for `orchestrations` and `activities` items.
    pub async fn worker(&self, orchestrations: i32, activities: i32) -> FakeWorker {
        serving::fake_worker(self.addr, orchestrations, activities).await
    }

    /// Once a second SDK worker process has connected beside `a`, SIGKILLs `a` and waits until
    /// it ended (what it held goes to the other); the moment it had.
    pub async fn kill_once_another_connected(
        &self,
        a: &mut tokio::process::Child,
    ) -> std::time::Instant {
        self.until_connected(2).await;
        a.start_kill().unwrap();
        a.wait().await.unwrap();
        std::time::Instant::now()
    }

    /// Waits (at most a minute) until `n` SDK workers are connected.
    pub async fn until_connected(&self, n: usize) {
        let start = std::time::Instant::now();
        while self.dispatcher.connected_workers() < n {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{n} SDK workers never connected (now {})",
                self.dispatcher.connected_workers()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn stop(self) {
        self.dispatcher.close();
        self.serving.shut_down().await;
        self.worker.shutdown().await;
    }
}
