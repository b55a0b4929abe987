//! Status queries, listing, and waiting for completion.

use std::time::Duration;

use serde::de::DeserializeOwned;
use taskhub_core::{HistoryEvent, InstanceId, OrchestrationStatus};
use taskhub_storage::{InstancePage, InstanceQuery, InstanceRow};
use tokio::sync::broadcast::error::RecvError;

use super::TaskHubClient;
use crate::error::TaskhubError;
use crate::retries;

/// What to include in a status query.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusOptions {
    /// Include the current execution's history.
    pub history: bool,
}

/// An instance's status, as the client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceStatus {
    /// The instance row.
    pub row: InstanceRow,
    /// The history, if requested.
    pub history: Option<Vec<HistoryEvent>>,
}

impl InstanceStatus {
    /// The runtime status.
    #[must_use]
    pub fn status(&self) -> OrchestrationStatus {
        self.row.status
    }

    /// The output deserialized into `T`, if the instance completed (for a terminated
    /// instance: the termination reason).
    ///
    /// # Errors
    /// A payload error if the output does not match `T`.
    pub fn output<T: DeserializeOwned>(&self) -> Result<Option<T>, TaskhubError> {
        if self.row.status == OrchestrationStatus::Suspended {
            return Ok(None);
        }
        Ok(match &self.row.output {
            Some(p) => Some(p.parse(&format!("output of instance '{}'", self.row.instance_id))?),
            None => None,
        })
    }

    /// Why the instance was suspended, while it is Suspended and the suspension gave a reason.
    #[must_use]
    pub fn suspend_reason(&self) -> Option<String> {
        suspend_reason(&self.row)
    }
}

/// The suspension reason a Suspended row carries (where a Terminated row carries the
/// termination reason: in its output).
#[must_use]
pub fn suspend_reason(row: &InstanceRow) -> Option<String> {
    if row.status != OrchestrationStatus::Suspended {
        return None;
    }
    let p = row.output.as_ref()?;
    Some(
        p.parse::<String>("suspension reason")
            .unwrap_or_else(|_| p.as_str().to_owned()),
    )
}

impl TaskHubClient {
    /// The status of one instance, or `None` if it does not exist.
    ///
    /// # Errors
    /// A storage error.
    pub async fn get_status(
        &self,
        instance_id: &InstanceId,
        options: StatusOptions,
    ) -> Result<Option<InstanceStatus>, TaskhubError> {
        let Some(row) = self.hub.store().get_instance(instance_id).await? else {
            return Ok(None);
        };
        let history = if options.history {
            Some(
                self.hub
                    .store()
                    .load_history(instance_id)
                    .await?
                    .map(|s| s.events)
                    .unwrap_or_default(),
            )
        } else {
            None
        };
        Ok(Some(InstanceStatus { row, history }))
    }

    /// Lists instances with filters and paging. Orchestrations only, unless
    /// [`InstanceQuery::include_entities`] is set (entities are instance rows `@name@key`;
    /// [`list_entities`](Self::list_entities) lists them with their state). The store leaves
    /// entities out in its query, so a page is never short because of them.
    ///
    /// # Errors
    /// A storage error.
    pub async fn list(&self, query: &InstanceQuery) -> Result<InstancePage, TaskhubError> {
        Ok(self.hub.store().list_instances(query).await?)
    }

    /// Waits until the instance completes, fails or is terminated. Inside one process this
    /// waits on a signal from the worker (no polling); for workers in other processes it also
    /// re-reads the row with a back-off of up to 1 s.
    ///
    /// # Errors
    /// `Timeout`, `NotFound` if the instance does not exist, or a storage error.
    pub async fn wait_for_completion(
        &self,
        instance_id: &InstanceId,
        timeout: Duration,
    ) -> Result<InstanceStatus, TaskhubError> {
        let clock = self.hub.clock().clone();
        let deadline = clock.monotonic() + timeout;
        let mut changes = self.hub.inner.signals.subscribe();
        let mut polls = retries::COMPLETION_POLL.waits();
        loop {
            let status = self
                .get_status(instance_id, StatusOptions::default())
                .await?
                .ok_or_else(|| TaskhubError::NotFound(instance_id.clone()))?;
            if status.status().is_terminal() {
                return Ok(status);
            }
            let now = clock.monotonic();
            if now >= deadline {
                return Err(TaskhubError::Timeout(timeout, instance_id.clone()));
            }
            let nap = clock.sleep(polls.current().min(deadline - now));
            tokio::pin!(nap);
            loop {
                tokio::select! {
                    () = &mut nap => { polls.grow(); break; }
                    change = changes.recv() => match change {
                        Ok(c) if c.instance_id == *instance_id && c.status.is_terminal() => break,
                        Ok(_) => {}
                        Err(RecvError::Lagged(_)) => break,
                        Err(RecvError::Closed) => { nap.as_mut().await; break; }
                    },
                }
            }
        }
    }
}
