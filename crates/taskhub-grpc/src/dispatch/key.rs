//! Completions without a token. The Go SDK's generated protos predate `completionToken`
//! (`client/worker_grpc.go` of `github.com/microsoft/durabletask-go` v0.6.0): its worker
//! answers an orchestration turn with the instance ID alone and an activity with the instance
//! ID and the task ID, as Go's own server matches them (`backend/executor.go`). Such an answer
//! is matched here to a work item that a stream **on the same connection** holds under that
//! key (an SDK sends its completions on the channel its stream runs on), never to an item the
//! stream was not given; the token found then completes it as if the worker had sent it. An
//! answer that matches nothing (late) is taken and dropped (`calls.rs`).
//!
//! An entity batch's answer (`EntityBatchResult`) names no entity: the .NET worker completes a
//! batch it got as the older `entityRequest` with an empty token and no `operationInfos`
//! (microsoft/durabletask-dotnet `src/Worker/Grpc/GrpcDurableTaskWorker.Processor.cs`,
//! `OnRunEntityBatchAsync` called without `completionToken`; `src/Shared/Grpc/ProtoUtils.cs`,
//! `ToEntityBatchResult`: `CompletionToken = completionToken ?? string.Empty`). Such an answer
//! is matched to the entity batch a stream on its connection holds when there is one; when
//! there are several, its `operationInfos` (the request IDs of the operations it answers, which
//! the newer path sends) choose among them, and without them the answer is refused
//! (`INVALID_ARGUMENT`, naming why): guessing could give one entity another's state.

use crate::proto::history_event::EventType;
use crate::proto::{work_item, ActivityResponse, OrchestratorResponse};

/// What names a work item to a worker that completes it without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemKey {
    /// An orchestration turn: at most one is out per instance.
    Orchestration {
        /// The instance ID.
        instance: String,
    },
    /// An activity: its instance and its task ID (the `TaskScheduled` event's ID).
    Activity {
        /// The instance ID.
        instance: String,
        /// The task ID.
        task: i32,
    },
    /// An entity batch: its entity and the request IDs of its operations, in order (an
    /// answer names neither but may list the request IDs in `operationInfos`).
    Entity {
        /// The entity's instance ID (`@name@key`).
        instance: String,
        /// Its operations' request IDs.
        requests: Vec<String>,
    },
}

impl ItemKey {
    /// The key of an outgoing work item (`None`: a health ping).
    pub(crate) fn of_request(request: &work_item::Request) -> Option<Self> {
        match request {
            work_item::Request::OrchestratorRequest(r) => Some(Self::Orchestration {
                instance: r.instance_id.clone(),
            }),
            work_item::Request::ActivityRequest(r) => Some(Self::Activity {
                instance: r
                    .orchestration_instance
                    .as_ref()
                    .map(|i| i.instance_id.clone())
                    .unwrap_or_default(),
                task: r.task_id,
            }),
            work_item::Request::EntityRequestV2(r) => Some(Self::Entity {
                instance: r.instance_id.clone(),
                requests: r
                    .operation_requests
                    .iter()
                    .filter_map(|e| match &e.event_type {
                        Some(EventType::EntityOperationCalled(c)) => Some(c.request_id.clone()),
                        Some(EventType::EntityOperationSignaled(s)) => Some(s.request_id.clone()),
                        _ => None,
                    })
                    .collect(),
            }),
            work_item::Request::EntityRequest(r) => Some(Self::Entity {
                instance: r.instance_id.clone(),
                requests: r.operations.iter().map(|o| o.request_id.clone()).collect(),
            }),
            work_item::Request::HealthPing(_) => None,
        }
    }

    /// Whether this is an entity batch whose operations include every request ID in
    /// `answered` (an entity answer's `operationInfos`; none: any batch).
    pub(crate) fn answers_entity(&self, answered: &[String]) -> bool {
        match self {
            Self::Entity { requests, .. } => answered.iter().all(|r| requests.contains(r)),
            _ => false,
        }
    }

    /// The key a turn's answer names.
    pub(crate) fn of_orchestrator_response(r: &OrchestratorResponse) -> Self {
        Self::Orchestration {
            instance: r.instance_id.clone(),
        }
    }

    /// The key an activity's answer names.
    pub(crate) fn of_activity_response(r: &ActivityResponse) -> Self {
        Self::Activity {
            instance: r.instance_id.clone(),
            task: r.task_id,
        }
    }

    /// The instance ID it names.
    pub(crate) fn instance(&self) -> &str {
        match self {
            Self::Orchestration { instance }
            | Self::Activity { instance, .. }
            | Self::Entity { instance, .. } => instance,
        }
    }

    /// The key in messages (`instance 'X'`, `task 3 of instance 'X'`), cut to a bounded
    /// length.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Orchestration { instance } => {
                format!("the turn of instance '{}'", crate::error::bounded(instance))
            }
            Self::Activity { instance, task } => {
                format!(
                    "task {task} of instance '{}'",
                    crate::error::bounded(instance)
                )
            }
            Self::Entity { instance, .. } => {
                format!("the batch of entity '{}'", crate::error::bounded(instance))
            }
        }
    }
}
