//! Completions without a token. The Go SDK's generated protos predate `completionToken`
//! (`client/worker_grpc.go` of `github.com/microsoft/durabletask-go` v0.6.0): its worker
//! answers an orchestration turn with the instance ID alone and an activity with the instance
//! ID and the task ID, as Go's own server matches them (`backend/executor.go`). Such an answer
//! is matched here to a work item that a stream **on the same connection** holds under that
//! key (an SDK sends its completions on the channel its stream runs on), never to an item the
//! stream was not given; the token found then completes it as if the worker had sent it. An
//! answer that matches nothing (late) is taken and dropped (`calls.rs`).

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
}

impl ItemKey {
    /// The key of an outgoing work item (`None`: one that cannot be answered without a
    /// token, such as an entity batch).
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
            _ => None,
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
            Self::Orchestration { instance } | Self::Activity { instance, .. } => instance,
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
        }
    }
}
