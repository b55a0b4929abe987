//! The client: start and manage orchestration instances.

mod clear;
mod control;
mod dead_letters;
mod entities;
mod executions;
pub(crate) mod prestart;
mod purge;
mod query;
mod rewind;
mod start;
pub mod tags;
mod typed;

pub use control::RaiseOptions;
pub use entities::{CleanEntities, CleanEntitiesResult, EntityMetadata, EntityPage, EntityQuery};
pub use executions::ExecutionStatus;
pub use purge::PurgeOutcome;
pub use query::{suspend_reason, InstanceStatus, StatusOptions};
pub use start::{ReusePolicy, StartOptions, StatusSet};
pub use typed::InstanceHandle;

use crate::hub::TaskHub;

/// Starts, queries and controls orchestration instances. Cheap to clone; made with
/// [`TaskHub::client`]. A client needs no worker in its process: what it writes reaches the
/// workers of the hub through storage.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use taskhub::*;
/// use taskhub_storage::{memory::MemoryStore, SystemClock};
///
/// async fn approval(ctx: OrchestrationContext, order: String) -> Result<String, OrchestrationError> {
///     ctx.set_custom_status("waiting for approval")?;
///     let approver: String = ctx.wait_for_event("approved").await?;
///     Ok(format!("{order} approved by {approver}"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
/// # let hub = TaskHub::open(store, Settings::default()).await?;
/// # let mut registry = Registry::new();
/// # registry.orchestration("Approval", approval);
/// # let worker = Worker::start(&hub, registry).await?;
/// let client = hub.client();
/// let id = InstanceId::new("order-42")?;
/// let options = StartOptions {
///     instance_id: Some(id.clone()),
///     ..StartOptions::default()
/// };
/// client.start_with("Approval", "order 42", options).await?;
///
/// // A second start of an active instance ID is refused under the default reuse policy.
/// let again = client.start_with("Approval", "order 42", StartOptions {
///     instance_id: Some(id.clone()),
///     ..StartOptions::default()
/// });
/// assert!(matches!(again.await, Err(TaskhubError::AlreadyExists { .. })));
///
/// client.raise_event(&id, "approved", "ana").await?;
/// let done = client.wait_for_completion(&id, Duration::from_secs(30)).await?;
/// assert_eq!(done.output::<String>()?.as_deref(), Some("order 42 approved by ana"));
///
/// let status = client.get_status(&id, StatusOptions { history: true }).await?;
/// assert!(status.is_some_and(|s| s.history.is_some_and(|h| !h.is_empty())));
/// assert!(client.purge(&id).await?); // history and row deleted
/// # worker.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TaskHubClient {
    hub: TaskHub,
}

impl TaskHubClient {
    pub(crate) fn new(hub: TaskHub) -> Self {
        Self { hub }
    }

    /// The caps on tags of the hub's settings, which starts apply: for a caller that checks
    /// tags itself first (a tag filter, a `KEY=VALUE` argument) with [`tags::parse_tag`].
    #[must_use]
    pub fn tag_caps(&self) -> tags::TagCaps {
        self.hub.settings().tag_caps()
    }
}
