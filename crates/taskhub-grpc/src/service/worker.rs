//! The worker half of the protocol (`GetWorkItems`, `Complete*Task`, `Abandon*WorkItem`):
//! a seam. [`Sidecar`](super::Sidecar) hands these calls to a [`WorkerCalls`] if it was
//! given one (`Sidecar::with_workers`; the [`Dispatcher`](crate::Dispatcher) is the one there
//! is), else answers `UNIMPLEMENTED`: an endpoint without a worker (`taskhub serve --grpc`)
//! serves only the client calls.

use std::pin::Pin;

use futures_util::Stream;
use tonic::{Request, Response, Status};

use crate::proto::{
    AbandonActivityTaskRequest, AbandonActivityTaskResponse, AbandonEntityTaskRequest,
    AbandonEntityTaskResponse, AbandonOrchestrationTaskRequest, AbandonOrchestrationTaskResponse,
    ActivityResponse, CompleteTaskResponse, EntityBatchResult, GetWorkItemsRequest, HistoryChunk,
    OrchestratorResponse,
};
use crate::wire::OutgoingWorkItem;

/// The stream of work items of one connected SDK worker (a turn's past events may go
/// encoded: see [`crate::wire`]).
pub type WorkItemStream = Pin<Box<dyn Stream<Item = Result<OutgoingWorkItem, Status>> + Send>>;

/// What serves connected SDK workers.
#[tonic::async_trait]
pub trait WorkerCalls: Send + Sync + 'static {
    /// `GetWorkItems`: the server stream of work items.
    async fn get_work_items(
        &self,
        request: Request<GetWorkItemsRequest>,
    ) -> Result<Response<WorkItemStream>, Status>;
    /// `CompleteOrchestratorTask`.
    async fn complete_orchestrator_task(
        &self,
        request: Request<OrchestratorResponse>,
    ) -> Result<Response<CompleteTaskResponse>, Status>;
    /// `CompleteActivityTask`.
    async fn complete_activity_task(
        &self,
        request: Request<ActivityResponse>,
    ) -> Result<Response<CompleteTaskResponse>, Status>;
    /// `CompleteEntityTask`.
    async fn complete_entity_task(
        &self,
        request: Request<EntityBatchResult>,
    ) -> Result<Response<CompleteTaskResponse>, Status>;
    /// `AbandonTaskOrchestratorWorkItem`.
    async fn abandon_orchestrator(
        &self,
        request: Request<AbandonOrchestrationTaskRequest>,
    ) -> Result<Response<AbandonOrchestrationTaskResponse>, Status>;
    /// `AbandonTaskActivityWorkItem`.
    async fn abandon_activity(
        &self,
        request: Request<AbandonActivityTaskRequest>,
    ) -> Result<Response<AbandonActivityTaskResponse>, Status>;
    /// `AbandonTaskEntityWorkItem`.
    async fn abandon_entity(
        &self,
        request: Request<AbandonEntityTaskRequest>,
    ) -> Result<Response<AbandonEntityTaskResponse>, Status>;
    /// The past events of the turn of `instance` (of `execution`, if named) that went out to a
    /// worker without them (`requiresHistoryStreaming`), in chunks, for its `StreamInstanceHistory` with
    /// `forWorkItemProcessing`; `Ok(None)` if no such turn is out here (the stored history is
    /// streamed then).
    ///
    /// # Errors
    /// A status for the caller.
    fn streamed_history(
        &self,
        instance: &str,
        execution: Option<&str>,
    ) -> Result<Option<Vec<HistoryChunk>>, Status> {
        let _ = (instance, execution);
        Ok(None)
    }
}

/// The answer to a worker call while no [`WorkerCalls`] is plugged in.
pub(crate) fn not_served(rpc: &str) -> Status {
    Status::unimplemented(format!(
        "{rpc}: SDK workers are not served by this endpoint, which answers the client calls \
         only (start, query, raise, terminate, suspend, resume, purge, restart, history, \
         entities); connect SDK workers to the endpoint of a worker (`taskhub worker --grpc`)"
    ))
}
