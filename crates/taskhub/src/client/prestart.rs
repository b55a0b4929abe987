//! Terminating, suspending, resuming and purging an instance whose start is scheduled in the
//! future: the client acts on the row at once (conditionally on the ETag it read) instead of
//! queueing a message behind the delayed start. The worker then refuses the start when it is
//! delivered (see `worker::orchestration::start_accept::judge_start`); a resume sends a fresh
//! start.

use taskhub_core::{InstanceId, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::{CheckpointRequest, Expect, InstanceRow, QueueName, StorageError};

use super::start::plan::{start_delay, start_message, StartMessage};
use super::TaskHubClient;
use crate::error::TaskhubError;
use crate::rows::waits_for_its_start;
use crate::signals::InstanceChanged;

/// What happened to a request on a row that waits for its scheduled start.
pub(crate) enum Outcome {
    /// Done on the row.
    Done,
    /// The row is not (or no longer) waiting for its start: use the message path.
    NotWaiting(Box<InstanceRow>),
}

/// How often a row write that lost a race is decided again before giving up.
const ATTEMPTS: u32 = 8;

impl TaskHubClient {
    /// Rewrites a row waiting for its start with `change`, conditionally on its ETag; re-reads
    /// and decides again after a conflict.
    async fn rewrite_waiting_row(
        &self,
        instance_id: &InstanceId,
        change: impl Fn(&mut InstanceRow, Timestamp),
    ) -> Result<Outcome, TaskhubError> {
        let store = self.hub.store();
        for _ in 0..ATTEMPTS {
            let row = self.existing(instance_id).await?;
            let now = self.hub.clock().now();
            if !waits_for_its_start(&row, now) {
                return Ok(Outcome::NotWaiting(Box::new(row)));
            }
            let Some(etag) = row.etag.clone() else {
                return Err(StorageError::Backend("instance row without ETag".into()).into());
            };
            let mut next = row;
            change(&mut next, now);
            next.updated_at = now;
            match store.put_instance(&next, Expect::ETag(etag)).await {
                Ok(_) => {
                    self.hub.inner.signals.instance_changed(InstanceChanged {
                        instance_id: instance_id.clone(),
                        status: next.status,
                    });
                    return Ok(Outcome::Done);
                }
                Err(StorageError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(StorageError::Conflict {
            what: format!("instance '{instance_id}'"),
        }
        .into())
    }

    /// Terminates an instance before its scheduled start: the row becomes Terminated (output:
    /// `output` if given, else the reason) and the start, when delivered, is discarded.
    pub(crate) async fn terminate_before_start(
        &self,
        instance_id: &InstanceId,
        reason: &str,
        output: Option<&Payload>,
    ) -> Result<Outcome, TaskhubError> {
        let output = match output {
            Some(given) => given.clone(),
            None => Payload::to_payload(&reason, "termination reason")?,
        };
        self.rewrite_waiting_row(instance_id, |row, now| {
            row.status = OrchestrationStatus::Terminated;
            row.output = Some(output.clone());
            row.completed_at = Some(now);
        })
        .await
    }

    /// Suspends an instance before its scheduled start: the row becomes Suspended (output: the
    /// reason); the start, when delivered, is discarded, and a resume sends it again.
    pub(crate) async fn suspend_before_start(
        &self,
        instance_id: &InstanceId,
        reason: Option<&str>,
    ) -> Result<Outcome, TaskhubError> {
        let output = reason
            .map(|r| Payload::to_payload(&r, "suspension reason"))
            .transpose()?;
        self.rewrite_waiting_row(instance_id, |row, _| {
            row.status = OrchestrationStatus::Suspended;
            row.output.clone_from(&output);
        })
        .await
    }

    /// Purges an instance before its scheduled start. The row is first marked (conditionally)
    /// so that a worker that started it meanwhile wins; then the row, history and payloads go.
    /// The start, when delivered, finds no row and is discarded.
    pub(crate) async fn purge_before_start(
        &self,
        instance_id: &InstanceId,
    ) -> Result<Outcome, TaskhubError> {
        match self
            .terminate_before_start(instance_id, "purged before its scheduled start", None)
            .await?
        {
            Outcome::Done => {}
            other @ Outcome::NotWaiting(_) => return Ok(other),
        }
        let store = self.hub.store();
        store.delete_history(instance_id).await?;
        store.delete_payloads(instance_id).await?;
        store.delete_instance(instance_id).await?;
        Ok(Outcome::Done)
    }

    /// Resumes an instance suspended before it ever ran: the row becomes Pending again and a
    /// fresh start is sent (for the scheduled time, or at once if it has passed), in one
    /// checkpoint conditional on the row. Returns false if the instance did run already (the
    /// caller resumes it with a message).
    pub(crate) async fn resume_before_start(
        &self,
        row: &InstanceRow,
    ) -> Result<bool, TaskhubError> {
        if row.status != OrchestrationStatus::Suspended || row.scheduled_start.is_none() {
            return Ok(false);
        }
        let store = self.hub.store();
        let ran = store
            .load_history(&row.instance_id)
            .await?
            .is_some_and(|h| h.execution_id == row.execution_id);
        if ran {
            return Ok(false);
        }
        let Some(etag) = row.etag.clone() else {
            return Err(StorageError::Backend("instance row without ETag".into()).into());
        };
        let now = self.hub.clock().now();
        let start = start_message(&StartMessage {
            instance_id: &row.instance_id,
            name: &row.name,
            version: row.version.as_ref(),
            input: &row.input,
            execution_id: &row.execution_id,
            scheduled_start: row.scheduled_start,
            partition: row.partition,
            now,
        });
        let delay = start_delay(row.scheduled_start, now, store.max_delay());
        let queue = QueueName::Control(row.partition);
        let outbound = vec![self.outbound(queue, &start, delay).await?];
        let pending = InstanceRow {
            status: OrchestrationStatus::Pending,
            output: None,
            updated_at: now,
            etag: None,
            ..row.clone()
        };
        let request = CheckpointRequest {
            instance_id: row.instance_id.clone(),
            fence: None,
            history: None,
            instance: Some((pending, Expect::ETag(etag))),
            outbound,
            consumed: Vec::new(),
        };
        store.checkpoint(request).await?;
        self.hub.inner.signals.enqueued_after(queue, delay);
        self.hub.inner.signals.instance_changed(InstanceChanged {
            instance_id: row.instance_id.clone(),
            status: OrchestrationStatus::Pending,
        });
        Ok(true)
    }
}
