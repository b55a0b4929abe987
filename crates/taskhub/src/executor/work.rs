//! The work a [`RemoteExecutor`](super::RemoteExecutor) is handed.

use std::sync::Arc;

use taskhub_core::{ExecutionId, FailureDetails, HistoryEvent, InstanceId, Payload, Tags};

/// One orchestration turn for a remote executor.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OrchestrationWork {
    /// The instance.
    pub instance: InstanceId,
    /// The execution the turn belongs to.
    pub execution_id: ExecutionId,
    /// The orchestration's name (from its `ExecutionStarted`), for routing and logs.
    pub name: String,
    /// The execution's history before this turn, oldest first (starts with `ExecutionStarted`
    /// unless this turn starts the execution). Shared with the session, which waits for the
    /// answer: a turn's question copies no history.
    pub past: Arc<Vec<HistoryEvent>>,
    /// The events this turn adds, in order: `OrchestratorStarted`, then each applied message
    /// (`ExecutionStarted`, task and timer results, raised events, suspend/resume ...).
    pub new: Vec<HistoryEvent>,
    /// The W3C trace context of the execution's start, if any.
    pub traceparent: Option<String>,
    /// The executor's span of the whole execution, as its last answer for the execution gave
    /// it (an SDK's `orchestrationTraceContext`); best effort, kept in memory only.
    pub span: Option<super::OrchestrationSpan>,
}

impl OrchestrationWork {
    /// A turn of `instance`'s execution `execution_id` of orchestration `name`.
    #[must_use]
    pub fn new(
        instance: InstanceId,
        execution_id: ExecutionId,
        name: String,
        past: impl Into<Arc<Vec<HistoryEvent>>>,
        new: Vec<HistoryEvent>,
    ) -> Self {
        Self {
            instance,
            execution_id,
            name,
            past: past.into(),
            new,
            traceparent: None,
            span: None,
        }
    }
}

/// One activity for a remote executor.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ActivityWork {
    /// The orchestration instance that scheduled it.
    pub instance: InstanceId,
    /// That instance's execution.
    pub execution_id: ExecutionId,
    /// The task ID the result is reported under.
    pub task_id: u64,
    /// The activity's name.
    pub name: String,
    /// The activity's version.
    pub version: Option<String>,
    /// The input.
    pub input: Payload,
    /// A stable ID of this scheduled task (the same for every attempt and redelivery).
    pub task_execution_id: String,
    /// The W3C trace context of the scheduling turn, if any.
    pub traceparent: Option<String>,
    /// The tags the orchestration gave the task (its `TaskScheduled` event's; empty: none).
    pub tags: Tags,
}

impl ActivityWork {
    /// Activity `name` with a `null` input, scheduled as task `task_id` by `instance`'s
    /// execution `execution_id`; its `task_execution_id` is `{execution_id}:{task_id}`.
    #[must_use]
    pub fn new(
        instance: InstanceId,
        execution_id: ExecutionId,
        task_id: u64,
        name: String,
    ) -> Self {
        Self {
            task_execution_id: format!("{execution_id}:{task_id}"),
            instance,
            execution_id,
            task_id,
            name,
            version: None,
            input: Payload::null(),
            traceparent: None,
            tags: Tags::new(),
        }
    }

    /// The same work with `input`.
    #[must_use]
    pub fn with_input(mut self, input: Payload) -> Self {
        self.input = input;
        self
    }
}

/// What an activity produced: its output, or why it failed.
pub type ActivityOutcome = Result<Payload, FailureDetails>;
