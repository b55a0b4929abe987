//! Rewinding a failed instance: it runs again from where it failed, keeping what succeeded
//! (what a rewind drops and keeps: `taskhub_core::engine::rewind`, `docs/REWIND.md`).

use std::time::Duration;

use taskhub_core::{EntityId, EventKind, InstanceId, Message, MessageId, OrchestrationStatus};
use taskhub_storage::{CheckpointRequest, Expect, QueueName, StorageError};

use super::TaskHubClient;
use crate::error::TaskhubError;

/// How many times a rewind decides again when the row changed under it.
const ATTEMPTS: u32 = 5;

impl TaskHubClient {
    /// Rewinds a Failed instance: the failed activities and the failure are dropped from its
    /// history, everything that succeeded is kept, failed sub-orchestrations are rewound too
    /// (with the same `reason`), and the instance is Running again at once; its worker replays
    /// the rewound history and schedules the failed work again.
    ///
    /// The instance row turns Running in the same write that sends the request, so a caller
    /// that waits for completion right after waits for the rewound run, not the old failure.
    ///
    /// # Errors
    /// `NotFound` for an unknown instance, `WrongStatus` unless it is Failed, `Invalid` for an
    /// entity, or a storage error.
    #[tracing::instrument(name = "rewind_request", skip(self), fields(instance = %instance_id))]
    pub async fn rewind(
        &self,
        instance_id: &InstanceId,
        reason: Option<&str>,
    ) -> Result<(), TaskhubError> {
        if EntityId::is_entity_instance(instance_id) {
            return Err(TaskhubError::Invalid(
                taskhub_core::CoreError::NotRewindable {
                    status: "an entity".to_owned(),
                },
            ));
        }
        let mut attempts = 0;
        loop {
            match self.try_rewind(instance_id, reason).await {
                Err(TaskhubError::Storage(StorageError::Conflict { .. }))
                    if attempts < ATTEMPTS =>
                {
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// One attempt: the Failed row turned Running, with the request, in one write conditional
    /// on the row read.
    async fn try_rewind(
        &self,
        instance_id: &InstanceId,
        reason: Option<&str>,
    ) -> Result<(), TaskhubError> {
        let store = self.hub.store();
        let row = self.existing(instance_id).await?;
        if row.status != OrchestrationStatus::Failed {
            return Err(TaskhubError::wrong_status(
                instance_id,
                row.status,
                "rewind",
            ));
        }
        let etag = row
            .etag
            .clone()
            .ok_or_else(|| StorageError::Backend("instance row without ETag".into()))?;
        let now = self.hub.clock().now();
        let mut request = Message::from_client(
            instance_id.clone(),
            EventKind::ExecutionRewound {
                reason: reason.map(str::to_owned),
                rewound_tasks: Vec::new(),
            },
            now,
        );
        // One ID per failure (the Failed row's version): a request sent twice for it (a retry
        // after a conflict whose write had sent it already, two callers at once) is applied
        // once by the worker.
        request.id = MessageId::derived(
            instance_id,
            &row.execution_id,
            &format!("rewind:{}", etag.0),
        );
        request.execution_id = Some(row.execution_id.clone());
        request.target_partition = Some(row.partition);
        let queue = QueueName::Control(row.partition);
        let outbound = vec![self.outbound(queue, &request, Duration::ZERO).await?];
        let mut running = row;
        running.status = OrchestrationStatus::Running;
        running.failure = None;
        running.output = None;
        running.completed_at = None;
        running.updated_at = now;
        running.etag = None;
        let execution = running.execution_id.clone();
        let written = store
            .checkpoint(CheckpointRequest {
                instance_id: instance_id.clone(),
                fence: None,
                history: None,
                instance: Some((running, Expect::ETag(etag))),
                outbound,
                consumed: Vec::new(),
            })
            .await;
        if let Err(StorageError::Conflict { what }) = written {
            // The row moved. A backend without transactions may have sent the request before
            // the row write failed, and the worker may have rewound the instance already: a
            // row of the same execution that is not Failed any more is a rewind under way.
            self.hub.inner.signals.enqueued(queue);
            return match store.get_instance(instance_id).await? {
                Some(r)
                    if r.execution_id == execution && r.status != OrchestrationStatus::Failed =>
                {
                    Ok(())
                }
                _ => Err(StorageError::Conflict { what }.into()),
            };
        }
        written?;
        self.hub.inner.signals.enqueued(queue);
        Ok(())
    }
}
