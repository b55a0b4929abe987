//! What activity code receives and returns.

use crate::history::FailureDetails;
use crate::ids::{ExecutionId, InstanceId};
use crate::orchestration::error::failure_wrapper;

/// Information about the activity invocation being run.
#[derive(Debug, Clone)]
pub struct ActivityContext {
    instance_id: InstanceId,
    execution_id: ExecutionId,
    name: String,
    task_id: u64,
    attempt: u32,
}

/// The fields of an [`ActivityContext`], as the runtime knows them from the work item.
#[derive(Debug, Clone)]
pub struct ActivityInvocation {
    /// The orchestration instance that scheduled the activity.
    pub instance_id: InstanceId,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// The activity name.
    pub name: String,
    /// The task ID of the `TaskScheduled` event.
    pub task_id: u64,
    /// The attempt number under the orchestration's retry policy (1 for the first attempt).
    pub attempt: u32,
}

impl ActivityContext {
    /// Builds the context for one invocation.
    #[must_use]
    pub fn new(inv: ActivityInvocation) -> Self {
        Self {
            instance_id: inv.instance_id,
            execution_id: inv.execution_id,
            name: inv.name,
            task_id: inv.task_id,
            attempt: inv.attempt,
        }
    }

    /// The orchestration instance that scheduled this activity.
    #[must_use]
    pub fn instance_id(&self) -> &InstanceId {
        &self.instance_id
    }

    /// The execution of that instance.
    #[must_use]
    pub fn execution_id(&self) -> &ExecutionId {
        &self.execution_id
    }

    /// The activity's registered name.
    #[must_use]
    pub fn task_name(&self) -> &str {
        &self.name
    }

    /// The task ID within the orchestration's history.
    #[must_use]
    pub fn task_id(&self) -> u64 {
        self.task_id
    }

    /// The attempt number under a retry policy: 1 for the first attempt.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

/// The error an activity returns. It reaches the orchestration as
/// [`TaskError::Failed`](crate::TaskError::Failed) with message and details intact.
///
/// Any `std::error::Error` converts into it, so `?` works in activities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityError {
    failure: FailureDetails,
}

impl ActivityError {
    /// An error with a message (error type `ActivityFailed`).
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            failure: FailureDetails::new("ActivityFailed", message),
        }
    }

    /// Marks the failure as permanent: retry policies do not retry it.
    #[must_use]
    pub fn non_retryable(mut self) -> Self {
        self.failure.non_retryable = true;
        self
    }
}

failure_wrapper!(ActivityError, from_error);
