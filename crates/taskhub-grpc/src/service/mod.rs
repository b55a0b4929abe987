//! [`Sidecar`]: the `TaskHubSidecarService` over a [`TaskHub`]. Each group of calls lives in
//! its own module; this one only routes them. The worker calls go to a [`WorkerCalls`] when
//! one is plugged in, else they are answered `UNIMPLEMENTED`.

mod admin;
mod caps;
mod children;
mod control;
mod deadline;
mod entities;
mod fields;
mod history;
mod purge;
mod query;
mod read;
mod restart;
mod reuse;
mod start;
pub mod worker;

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, StreamExt as _};
use taskhub::{TaskHub, TaskHubClient};
use taskhub_storage::Clock;
use tonic::{Request, Response, Status};

use crate::proto::task_hub_sidecar_service_server::TaskHubSidecarService;
use crate::proto::{
    AbandonActivityTaskRequest, AbandonActivityTaskResponse, AbandonEntityTaskRequest,
    AbandonEntityTaskResponse, AbandonOrchestrationTaskRequest, AbandonOrchestrationTaskResponse,
    ActivityResponse, CleanEntityStorageRequest, CleanEntityStorageResponse, CompleteTaskResponse,
    CreateInstanceRequest, CreateInstanceResponse, CreateTaskHubRequest, CreateTaskHubResponse,
    DeleteTaskHubRequest, DeleteTaskHubResponse, EntityBatchResult, GetEntityRequest,
    GetEntityResponse, GetInstanceRequest, GetInstanceResponse, GetWorkItemsRequest, HistoryChunk,
    ListInstanceIdsRequest, ListInstanceIdsResponse, OrchestratorResponse, PurgeInstancesRequest,
    PurgeInstancesResponse, QueryEntitiesRequest, QueryEntitiesResponse, QueryInstancesRequest,
    QueryInstancesResponse, RaiseEventRequest, RaiseEventResponse, RestartInstanceRequest,
    RestartInstanceResponse, ResumeRequest, ResumeResponse, RewindInstanceRequest,
    RewindInstanceResponse, SignalEntityRequest, SignalEntityResponse,
    SkipGracefulOrchestrationTerminationsRequest, SkipGracefulOrchestrationTerminationsResponse,
    StreamInstanceHistoryRequest, SuspendRequest, SuspendResponse, TerminateRequest,
    TerminateResponse,
};
pub use caps::RequestCaps;
pub use worker::{WorkItemStream, WorkerCalls};

/// `GetWorkItems`' stream as the generated service has it: plain `WorkItem`s.
pub type PlainWorkItems =
    Pin<Box<dyn Stream<Item = Result<crate::proto::WorkItem, Status>> + Send>>;

/// The stream of history chunks of `StreamInstanceHistory`.
pub type HistoryStream = Pin<Box<dyn Stream<Item = Result<HistoryChunk, Status>> + Send>>;

/// The service over one hub. Cheap to clone.
#[derive(Clone)]
pub struct Sidecar {
    client: TaskHubClient,
    /// The hub's clock: "now" for scheduled starts and signals, and the waits of
    /// `WaitForInstanceStart`.
    clock: Arc<dyn Clock>,
    workers: Option<Arc<dyn WorkerCalls>>,
    caps: RequestCaps,
}

impl std::fmt::Debug for Sidecar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sidecar")
            .field("workers", &self.workers.is_some())
            .finish_non_exhaustive()
    }
}

impl Sidecar {
    /// The client calls over `hub`; the worker calls answer `UNIMPLEMENTED`.
    #[must_use]
    pub fn new(hub: &TaskHub) -> Self {
        Self {
            client: hub.client(),
            clock: Arc::clone(hub.clock()),
            workers: None,
            caps: RequestCaps::default(),
        }
    }

    /// Refuses client calls over `caps` (default [`RequestCaps::default`]).
    #[must_use]
    pub fn with_caps(mut self, caps: RequestCaps) -> Self {
        self.caps = caps;
        self
    }

    /// Serves the worker calls with `workers`.
    #[must_use]
    pub fn with_workers(mut self, workers: Arc<dyn WorkerCalls>) -> Self {
        self.workers = Some(workers);
        self
    }

    /// `GetWorkItems`: the connected worker's stream, each turn's past events encoded as the
    /// dispatcher keeps them ([`serve`](crate::serve) routes the call here).
    ///
    /// # Errors
    /// `UNIMPLEMENTED` without worker calls; the [`WorkerCalls`]' refusal.
    pub async fn work_items(&self, r: Request<GetWorkItemsRequest>) -> Answer<WorkItemStream> {
        self.workers("GetWorkItems")?.get_work_items(r).await
    }

    fn workers(&self, rpc: &str) -> Result<&Arc<dyn WorkerCalls>, Status> {
        self.workers.as_ref().ok_or_else(|| worker::not_served(rpc))
    }
}

type Answer<T> = Result<Response<T>, Status>;

fn ok<T>(r: Result<T, Status>) -> Answer<T> {
    r.map(Response::new)
}

#[tonic::async_trait]
impl TaskHubSidecarService for Sidecar {
    async fn hello(&self, _: Request<()>) -> Answer<()> {
        Ok(Response::new(()))
    }

    async fn start_instance(
        &self,
        r: Request<CreateInstanceRequest>,
    ) -> Answer<CreateInstanceResponse> {
        self.caps.name(&r.get_ref().name, "name")?;
        self.caps
            .name(r.get_ref().version.as_deref().unwrap_or(""), "version")?;
        let lib = crate::library::Library::of(r.metadata());
        ok(start::start(&self.client, &*self.clock, lib, r.into_inner()).await)
    }

    async fn get_instance(&self, r: Request<GetInstanceRequest>) -> Answer<GetInstanceResponse> {
        ok(read::get(&self.client, r.into_inner()).await)
    }

    async fn rewind_instance(
        &self,
        r: Request<RewindInstanceRequest>,
    ) -> Answer<RewindInstanceResponse> {
        ok(admin::rewind(&self.client, r.into_inner()).await)
    }

    async fn restart_instance(
        &self,
        r: Request<RestartInstanceRequest>,
    ) -> Answer<RestartInstanceResponse> {
        ok(restart::restart(&self.client, r.into_inner()).await)
    }

    async fn wait_for_instance_start(
        &self,
        r: Request<GetInstanceRequest>,
    ) -> Answer<GetInstanceResponse> {
        let deadline = deadline::wait_budget(r.metadata());
        ok(read::wait_for_start(&self.client, &*self.clock, r.into_inner(), deadline).await)
    }

    async fn wait_for_instance_completion(
        &self,
        r: Request<GetInstanceRequest>,
    ) -> Answer<GetInstanceResponse> {
        let deadline = deadline::wait_budget(r.metadata());
        ok(read::wait_for_completion(&self.client, r.into_inner(), deadline).await)
    }

    async fn raise_event(&self, r: Request<RaiseEventRequest>) -> Answer<RaiseEventResponse> {
        self.caps.name(&r.get_ref().name, "name")?;
        ok(control::raise(&self.client, r.into_inner()).await)
    }

    async fn terminate_instance(&self, r: Request<TerminateRequest>) -> Answer<TerminateResponse> {
        ok(control::terminate(&self.client, r.into_inner()).await)
    }

    async fn suspend_instance(&self, r: Request<SuspendRequest>) -> Answer<SuspendResponse> {
        ok(control::suspend(&self.client, r.into_inner()).await)
    }

    async fn resume_instance(&self, r: Request<ResumeRequest>) -> Answer<ResumeResponse> {
        ok(control::resume(&self.client, r.into_inner()).await)
    }

    async fn query_instances(
        &self,
        r: Request<QueryInstancesRequest>,
    ) -> Answer<QueryInstancesResponse> {
        ok(query::query(&self.client, r.into_inner()).await)
    }

    async fn list_instance_ids(
        &self,
        r: Request<ListInstanceIdsRequest>,
    ) -> Answer<ListInstanceIdsResponse> {
        ok(query::list_ids(&self.client, r.into_inner()).await)
    }

    async fn purge_instances(
        &self,
        r: Request<PurgeInstancesRequest>,
    ) -> Answer<PurgeInstancesResponse> {
        ok(purge::purge(&self.client, r.into_inner()).await)
    }

    type GetWorkItemsStream = PlainWorkItems;

    /// Not reached through [`serve`](crate::serve), which routes `GetWorkItems` to
    /// [`Sidecar::work_items`] (the encoded past events go out as they are); here for a
    /// server built on the generated one alone: the same items, decoded into plain
    /// `WorkItem`s.
    async fn get_work_items(&self, r: Request<GetWorkItemsRequest>) -> Answer<PlainWorkItems> {
        let items = self.work_items(r).await?.into_inner();
        Ok(Response::new(Box::pin(items.map(|item| {
            item?
                .into_work_item()
                .map_err(|e| Status::internal(format!("a work item does not encode: {e}")))
        }))))
    }

    async fn complete_activity_task(
        &self,
        r: Request<ActivityResponse>,
    ) -> Answer<CompleteTaskResponse> {
        self.workers("CompleteActivityTask")?
            .complete_activity_task(r)
            .await
    }

    async fn complete_orchestrator_task(
        &self,
        r: Request<OrchestratorResponse>,
    ) -> Answer<CompleteTaskResponse> {
        self.workers("CompleteOrchestratorTask")?
            .complete_orchestrator_task(r)
            .await
    }

    async fn complete_entity_task(
        &self,
        r: Request<EntityBatchResult>,
    ) -> Answer<CompleteTaskResponse> {
        self.workers("CompleteEntityTask")?
            .complete_entity_task(r)
            .await
    }

    type StreamInstanceHistoryStream = HistoryStream;

    async fn stream_instance_history(
        &self,
        r: Request<StreamInstanceHistoryRequest>,
    ) -> Answer<HistoryStream> {
        let r = r.into_inner();
        if r.for_work_item_processing {
            if let Some(workers) = &self.workers {
                let execution = r.execution_id.as_deref().filter(|e| !e.is_empty());
                if let Some(chunks) = workers.streamed_history(&r.instance_id, execution)? {
                    let chunks: Vec<Result<_, Status>> = chunks.into_iter().map(Ok).collect();
                    let stream: HistoryStream = Box::pin(futures_util::stream::iter(chunks));
                    return Ok(Response::new(stream));
                }
            }
        }
        ok(history::stream_history(&self.client, r).await)
    }

    async fn create_task_hub(
        &self,
        r: Request<CreateTaskHubRequest>,
    ) -> Answer<CreateTaskHubResponse> {
        ok(admin::create_hub(&self.client, r.get_ref()).await)
    }

    async fn delete_task_hub(
        &self,
        _: Request<DeleteTaskHubRequest>,
    ) -> Answer<DeleteTaskHubResponse> {
        ok(admin::delete_hub(&self.client).await)
    }

    async fn signal_entity(&self, r: Request<SignalEntityRequest>) -> Answer<SignalEntityResponse> {
        self.caps.name(&r.get_ref().name, "name")?;
        ok(entities::signal(&self.client, &*self.clock, r.into_inner()).await)
    }

    async fn get_entity(&self, r: Request<GetEntityRequest>) -> Answer<GetEntityResponse> {
        ok(entities::get(&self.client, r.into_inner()).await)
    }

    async fn query_entities(
        &self,
        r: Request<QueryEntitiesRequest>,
    ) -> Answer<QueryEntitiesResponse> {
        ok(entities::query(&self.client, r.into_inner()).await)
    }

    async fn clean_entity_storage(
        &self,
        r: Request<CleanEntityStorageRequest>,
    ) -> Answer<CleanEntityStorageResponse> {
        ok(entities::clean(&self.client, r.into_inner()).await)
    }

    async fn abandon_task_activity_work_item(
        &self,
        r: Request<AbandonActivityTaskRequest>,
    ) -> Answer<AbandonActivityTaskResponse> {
        self.workers("AbandonTaskActivityWorkItem")?
            .abandon_activity(r)
            .await
    }

    async fn abandon_task_orchestrator_work_item(
        &self,
        r: Request<AbandonOrchestrationTaskRequest>,
    ) -> Answer<AbandonOrchestrationTaskResponse> {
        self.workers("AbandonTaskOrchestratorWorkItem")?
            .abandon_orchestrator(r)
            .await
    }

    async fn abandon_task_entity_work_item(
        &self,
        r: Request<AbandonEntityTaskRequest>,
    ) -> Answer<AbandonEntityTaskResponse> {
        self.workers("AbandonTaskEntityWorkItem")?
            .abandon_entity(r)
            .await
    }

    async fn skip_graceful_orchestration_terminations(
        &self,
        _: Request<SkipGracefulOrchestrationTerminationsRequest>,
    ) -> Answer<SkipGracefulOrchestrationTerminationsResponse> {
        Err(Status::unimplemented(
            "SkipGracefulOrchestrationTerminations is a Durable Task Scheduler call: use TerminateInstance",
        ))
    }
}
